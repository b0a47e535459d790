import Foundation
import Jobs
import Testing

/// Checks the field-skipping search against a plain minute-by-minute scan read through
/// Foundation's Calendar, and that long chains of calls stay correct.
@Suite("Cron expressions against a reference scan")
struct CronReferenceTests {
    /// An expression and, written out by hand, the values each of its fields allows.
    struct Case: Sendable, CustomStringConvertible {
        let expression: String
        let minutes: Set<Int>
        let hours: Set<Int>
        let daysOfMonth: Set<Int>?  // nil: `*`
        let months: Set<Int>
        let weekdays: Set<Int>?  // nil: `*`; 0 is Sunday

        var description: String { expression }

        func matches(_ parts: DateComponents) -> Bool {
            guard let minute = parts.minute, let hour = parts.hour, let day = parts.day, let month = parts.month,
                let weekday = parts.weekday
            else { return false }
            let dayOfMonth = daysOfMonth?.contains(day)
            let dayOfWeek = weekdays?.contains(weekday - 1)
            let dayMatches: Bool
            switch (dayOfMonth, dayOfWeek) {
            case (let byDate?, let byWeekday?): dayMatches = byDate || byWeekday
            case (let byDate?, nil): dayMatches = byDate
            case (nil, let byWeekday?): dayMatches = byWeekday
            case (nil, nil): dayMatches = true
            }
            return minutes.contains(minute) && hours.contains(hour) && months.contains(month) && dayMatches
        }
    }

    static let cases: [Case] = [
        Case(
            expression: "7,37 */5 * * *",
            minutes: [7, 37],
            hours: [0, 5, 10, 15, 20],
            daysOfMonth: nil,
            months: Set(1...12),
            weekdays: nil
        ),
        Case(
            expression: "0 12 13 * FRI",
            minutes: [0],
            hours: [12],
            daysOfMonth: [13],
            months: Set(1...12),
            weekdays: [5]
        ),
        Case(
            expression: "*/10 22-23,0-1 * * 1-5",
            minutes: [0, 10, 20, 30, 40, 50],
            hours: [22, 23, 0, 1],
            daysOfMonth: nil,
            months: Set(1...12),
            weekdays: [1, 2, 3, 4, 5]
        ),
        Case(
            expression: "30 6 1-7 * 0",
            minutes: [30],
            hours: [6],
            daysOfMonth: Set(1...7),
            months: Set(1...12),
            weekdays: [0]
        ),
        Case(
            expression: "45 23 28-31 * *",
            minutes: [45],
            hours: [23],
            daysOfMonth: Set(28...31),
            months: Set(1...12),
            weekdays: nil
        ),
    ]

    @Test(arguments: cases)
    func searchAgreesWithAMinuteByMinuteScan(reference: Case) throws {
        let cron = try CronExpression(parsing: reference.expression)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = CronFixture.utc
        // Twelve starting points spread over 2026-2028, none on a whole minute.
        let first = CronFixture.date("2026-01-01T00:00:17Z")
        for index in 0..<12 {
            let start = first.addingTimeInterval(Double(index) * 86_400 * 91.3 + Double(index * 631))
            var scan = Date(timeIntervalSince1970: (start.timeIntervalSince1970 / 60).rounded(.down) * 60 + 60)
            while !reference.matches(
                calendar.dateComponents([.minute, .hour, .day, .month, .weekday], from: scan)
            ) {
                scan = scan.addingTimeInterval(60)
            }
            #expect(cron.nextOccurrence(after: start, in: CronFixture.utc) == scan, "from \(start)")
        }
    }

    @Test func tenThousandQuarterHoursThroughSpringForwardAreEachFifteenRealMinutes() throws {
        let cron = try CronExpression(parsing: "*/15 * * * *")
        let start = CronFixture.date("2026-01-01T00:00:00+01:00")
        var current = start
        var irregular = 0
        for _ in 0..<10_000 {
            let next = try #require(cron.nextOccurrence(after: current, in: CronFixture.berlin))
            if next.timeIntervalSince(current) != 900 {
                irregular += 1
            }
            current = next
        }
        // 10,000 quarter hours is 104 days: past the 2026-03-29 change.
        #expect(irregular == 0)
        #expect(CronFixture.text(current, in: CronFixture.berlin) == "2026-04-15T05:00:00+02:00")
    }

    @Test func tenThousandWeekdayMorningsInNewYork() throws {
        let cron = try CronExpression(parsing: "0 9 * * MON-FRI")
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = CronFixture.newYork
        var current = CronFixture.date("2026-01-01T00:00:00Z")
        var wrong = 0
        var count = 0
        for _ in 0..<10_000 {
            guard let next = cron.nextOccurrence(after: current, in: CronFixture.newYork) else { break }
            let parts = calendar.dateComponents([.hour, .minute, .second, .weekday], from: next)
            if parts.hour != 9 || parts.minute != 0 || parts.second != 0 || [1, 7].contains(parts.weekday) {
                wrong += 1
            }
            // No weekday is skipped: at most a weekend (three days) between runs.
            if next.timeIntervalSince(current) > 3 * 86_400 + 3_600 {
                wrong += 1
            }
            count += 1
            current = next
        }
        #expect(count == 10_000)
        #expect(wrong == 0)
        // 00:00 UTC is still 2025-12-31 in New York, so the first run is Thursday 2026-01-01 and
        // the 10,000th, 2,000 weeks later, Wednesday 2064-04-30.
        #expect(CronFixture.text(current, in: CronFixture.newYork) == "2064-04-30T09:00:00-04:00")
    }

    @Test func impossibleExpressionIsNilEveryTime() throws {
        let cron = try CronExpression(parsing: "0 0 30 2 *")
        var found = 0
        for day in 0..<1_000 {
            let start = CronFixture.date("2026-01-01T00:00:00Z").addingTimeInterval(Double(day) * 86_400)
            if cron.nextOccurrence(after: start, in: CronFixture.berlin) != nil {
                found += 1
            }
        }
        #expect(found == 0)
    }
}
