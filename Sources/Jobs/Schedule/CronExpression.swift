/// A 5-field cron expression — minute, hour, day-of-month, month, day-of-week — whose
/// occurrences are read on the wall clock of a time zone.
///
/// ```swift
/// let weekdayMornings = try CronExpression(parsing: "30 9 * * MON-FRI")
/// let berlin = TimeZone(identifier: "Europe/Berlin")!
/// let next = weekdayMornings.nextOccurrence(after: clock.now, in: berlin)
/// ```
///
/// ## Syntax
///
/// | Field        | Values                           |
/// |--------------|----------------------------------|
/// | minute       | 0-59                             |
/// | hour         | 0-23                             |
/// | day-of-month | 1-31                             |
/// | month        | 1-12 or `JAN`-`DEC`              |
/// | day-of-week  | 0-7 (0 and 7 are Sunday) or `SUN`-`SAT` |
///
/// Each field is `*`, a value, a range `a-b`, a step `*/n`, `a-b/n` or `a/n` (from `a` to the end
/// of the range), or a comma list of these. Names are case-insensitive. Fields are separated by
/// whitespace; the whole expression is at most ``maximumLength`` characters. The macros `@yearly`
/// (`@annually`), `@monthly`, `@weekly`, `@daily` (`@midnight`) and `@hourly` stand for
/// `0 0 1 1 *`, `0 0 1 * *`, `0 0 * * 0`, `0 0 * * *` and `0 * * * *`.
///
/// ## Days
///
/// As in Vixie cron (and POSIX): when both day fields are restricted, a day matches if *either*
/// matches — `0 0 1 * MON` runs on the 1st and on every Monday. A day field that starts with `*`
/// (`*` or `*/n`) counts as unrestricted, and then a day must match both fields, so with `*` only
/// the other field counts (`0 0 * * MON` runs on Mondays), and `0 0 */2 * MON` runs on Mondays
/// that fall on an odd day of the month, exactly as Vixie cron reads it.
///
/// ## Daylight saving time
///
/// ``nextOccurrence(after:in:)`` follows Vixie cron's rules, and they depend on the hour field:
///
/// - **A fixed hour** (anything not starting with `*`, such as `30 2 * * *` or `0 9-17 * * *`):
///   - A wall time that a spring-forward gap skips runs once, at the first instant after the gap.
///     `30 2 * * *` in Europe/Berlin on 2026-03-29 runs at 03:00 CEST (01:00 UTC).
///   - A wall time that a fall-back repeats runs once, at its first occurrence. `30 2 * * *` in
///     Europe/Berlin on 2026-10-25 runs at 02:30 CEST (00:30 UTC) and not again at 02:30 CET.
/// - **A wildcard hour** (`*` or `*/n`, such as `*/15 * * * *` or `@hourly`): the expression
///   keeps running by the wall clock as it is. Skipped wall times do not run (`*/15 * * * *`
///   goes from 01:45 CET to 03:00 CEST, 15 real minutes), and repeated wall times run at both
///   occurrences (`*/15 * * * *` runs at 02:00, 02:15, 02:30, 02:45 CEST and again CET), so it
///   keeps running every 15 real minutes through both changes.
///
/// Several wall times that land on the same instant run once.
public struct CronExpression: Sendable, Hashable, CustomStringConvertible {
    /// The longest expression ``init(parsing:)`` accepts, in characters.
    public static let maximumLength = 200

    /// How far ``nextOccurrence(after:in:)`` looks ahead: 9 years of 366 days, so that an
    /// expression that only matches February 29 is found across a century's skipped leap year
    /// (2096 to 2104).
    static let searchHorizonSeconds = 9 * 366 * 86_400

    /// The expression as parsed: the macro in lower case, or the five fields separated by one space.
    public let description: String

    // Bit `v` is set when value `v` matches.
    let minutes: UInt64
    let hours: UInt64
    let daysOfMonth: UInt64
    let months: UInt64
    /// Sunday is 0 (a 7 in the text is folded into 0).
    let daysOfWeek: UInt64
    /// The field starts with `*`: see "Days" above.
    let dayOfMonthIsWildcard: Bool
    let dayOfWeekIsWildcard: Bool
    /// The field starts with `*`: see "Daylight saving time" above.
    let hourIsWildcard: Bool

    private static let macros: [String: String] = [
        "@yearly": "0 0 1 1 *",
        "@annually": "0 0 1 1 *",
        "@monthly": "0 0 1 * *",
        "@weekly": "0 0 * * 0",
        "@daily": "0 0 * * *",
        "@midnight": "0 0 * * *",
        "@hourly": "0 * * * *",
    ]

    /// Parses `text`.
    ///
    /// - Throws: ``ScheduleError`` with one sentence naming the field, what is wrong with it and
    ///   the values it allows, such as `cron field 2 (hour) "25": value 25 is outside 0-23`.
    public init(parsing text: String) throws(ScheduleError) {
        let length = text.unicodeScalars.count
        guard length <= Self.maximumLength else {
            throw ScheduleError(
                message: "cron expression is \(length) characters long; the limit is \(Self.maximumLength)"
            )
        }
        let tokens = text.split(whereSeparator: \.isWhitespace).map(String.init)
        guard let first = tokens.first else {
            throw ScheduleError(
                message: "cron expression is empty; expected 5 fields (minute hour day-of-month month day-of-week) "
                    + "or a macro such as @daily"
            )
        }
        if first.hasPrefix("@") {
            guard tokens.count == 1 else {
                throw ScheduleError(message: "cron macro \"\(first)\" must stand alone, without other fields")
            }
            let macro = first.lowercased()
            guard let fields = Self.macros[macro] else {
                throw ScheduleError(
                    message: "cron macro \"\(first)\" is not supported; "
                        + "use @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly"
                )
            }
            try self.init(fields: fields.split(separator: " ").map(String.init), description: macro)
        } else {
            guard tokens.count == 5 else {
                throw ScheduleError(
                    message: "cron expression \"\(text)\" has \(tokens.count) fields; expected 5 "
                        + "(minute hour day-of-month month day-of-week) or a macro such as @daily"
                )
            }
            try self.init(fields: tokens, description: tokens.joined(separator: " "))
        }
    }

    private init(fields: [String], description: String) throws(ScheduleError) {
        self.description = description
        minutes = try CronField.minute.parse(fields[0])
        hours = try CronField.hour.parse(fields[1])
        daysOfMonth = try CronField.dayOfMonth.parse(fields[2])
        months = try CronField.month.parse(fields[3])
        daysOfWeek = try CronField.dayOfWeek.parse(fields[4])
        hourIsWildcard = fields[1].hasPrefix("*")
        dayOfMonthIsWildcard = fields[2].hasPrefix("*")
        dayOfWeekIsWildcard = fields[4].hasPrefix("*")
    }
}
