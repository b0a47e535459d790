/// One of the five positions of a cron expression: what it is called, which values it takes and
/// the names it accepts, and how one of its fields is read into a set of values.
struct CronField: Sendable {
    /// 1-based position, used in error messages.
    let position: Int
    let name: String
    let range: ClosedRange<Int>
    /// Three-letter names (upper case) and the values they stand for.
    let names: [String: Int]
    /// What a value may look like, for the "not a value" error.
    let expectation: String

    static let minute = CronField(
        position: 1,
        name: "minute",
        range: 0...59,
        names: [:],
        expectation: "a number in 0-59"
    )
    static let hour = CronField(position: 2, name: "hour", range: 0...23, names: [:], expectation: "a number in 0-23")
    static let dayOfMonth = CronField(
        position: 3,
        name: "day-of-month",
        range: 1...31,
        names: [:],
        expectation: "a number in 1-31"
    )
    static let month = CronField(
        position: 4,
        name: "month",
        range: 1...12,
        names: [
            "JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6,
            "JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12,
        ],
        expectation: "a month number 1-12 or name JAN-DEC"
    )
    /// 0 and 7 are both Sunday; ``parse(_:)`` folds 7 into 0.
    static let dayOfWeek = CronField(
        position: 5,
        name: "day-of-week",
        range: 0...7,
        names: ["SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6],
        expectation: "a weekday number 0-7 or name SUN-SAT"
    )

    static let all: [CronField] = [.minute, .hour, .dayOfMonth, .month, .dayOfWeek]

    private var rangeText: String { "\(range.lowerBound)-\(range.upperBound)" }

    /// Reads a field (`*`, `5`, `1-5`, `MON-FRI`, `*/15`, `10-50/20`, `5/10`, or a comma list of
    /// these) into a bit set: bit `v` is set when value `v` matches.
    func parse(_ text: String) throws(ScheduleError) -> UInt64 {
        var bits: UInt64 = 0
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            bits |= try parseItem(item, field: text)
        }
        if range.upperBound == 7, bits & (1 << 7) != 0 {
            bits = (bits & ~(1 << 7)) | 1
        }
        return bits
    }

    private func parseItem(_ item: Substring, field: String) throws(ScheduleError) -> UInt64 {
        guard !item.isEmpty else {
            throw error(in: field, "a list item is empty; allowed values are \(rangeText)")
        }
        let parts = item.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2 else {
            throw error(in: field, "\"\(item)\" has more than one \"/\"")
        }
        let low: Int
        let high: Int
        if parts[0] == "*" {
            low = range.lowerBound
            high = range.upperBound
        } else {
            let bounds = parts[0].split(separator: "-", omittingEmptySubsequences: false)
            guard bounds.count <= 2 else {
                throw error(in: field, "\"\(parts[0])\" is neither a value nor a range a-b")
            }
            low = try value(bounds[0], item: item, field: field)
            if bounds.count == 2 {
                high = try value(bounds[1], item: item, field: field)
                guard low <= high else {
                    throw error(in: field, "range \(parts[0]) runs backwards; write it low-high within \(rangeText)")
                }
            } else {
                // `a/n` runs from a to the end of the range; a lone `a` is just a.
                high = parts.count == 2 ? range.upperBound : low
            }
        }
        let step = parts.count == 2 ? try self.step(parts[1], field: field) : 1
        var bits: UInt64 = 0
        for value in stride(from: low, through: high, by: step) {
            bits |= 1 << UInt64(value)
        }
        return bits
    }

    private func value(_ token: Substring, item: Substring, field: String) throws(ScheduleError) -> Int {
        guard !token.isEmpty else {
            throw error(in: field, "a value is missing in \"\(item)\"; allowed values are \(rangeText)")
        }
        if token.allSatisfy(isASCIIDigit) {
            guard let number = Int(token), range.contains(number) else {
                throw error(in: field, "value \(token) is outside \(rangeText)")
            }
            return number
        }
        guard let named = names[token.uppercased()] else {
            throw error(in: field, "\"\(token)\" is not \(expectation)")
        }
        return named
    }

    private func step(_ token: Substring, field: String) throws(ScheduleError) -> Int {
        let allowed = 1...range.upperBound
        guard token.allSatisfy(isASCIIDigit), !token.isEmpty else {
            throw error(in: field, "step \"\(token)\" is not a number in 1-\(allowed.upperBound)")
        }
        guard let number = Int(token), allowed.contains(number) else {
            throw error(in: field, "step \(token) is outside 1-\(allowed.upperBound)")
        }
        return number
    }

    private func error(in field: String, _ problem: String) -> ScheduleError {
        ScheduleError(message: "cron field \(position) (\(name)) \"\(field)\": \(problem)")
    }
}

/// `0` to `9` only: `Int(_:)` would also take a sign, and `isNumber` takes other scripts' digits.
private func isASCIIDigit(_ character: Character) -> Bool {
    character.isASCII && character.isNumber
}
