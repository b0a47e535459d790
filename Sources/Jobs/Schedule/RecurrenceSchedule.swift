public import Foundation
import HeraldCore

/// When a recurring job runs again: a fixed interval, or a 5-field cron expression read in a time
/// zone.
///
/// Stored as JSON text in `jobs.schedule`: `{"every_seconds": 3600}` or
/// `{"cron": "0 9 * * 1-5", "time_zone": "Europe/Berlin"}`.
public enum RecurrenceSchedule: Sendable, Hashable {
    /// Every `seconds` after the previous due time (at least 1).
    case interval(seconds: Int64)
    /// Each minute the expression matches, in `timeZone`.
    case cron(CronExpression, timeZone: TimeZone)

    /// The first occurrence strictly after `date`, or `nil` when there is none.
    public func nextOccurrence(after date: Date) -> Date? {
        switch self {
        case .interval(let seconds):
            return date.addingTimeInterval(TimeInterval(seconds))
        case .cron(let expression, let timeZone):
            return expression.nextOccurrence(after: date, in: timeZone)
        }
    }
}

extension RecurrenceSchedule {
    /// The longest interval accepted: one year.
    public static let maximumIntervalSeconds: Int64 = 366 * 24 * 3_600

    /// A fixed interval, checked: 1 second to one year.
    public static func every(seconds: Int64) throws(ScheduleError) -> RecurrenceSchedule {
        guard seconds >= 1, seconds <= maximumIntervalSeconds else {
            throw ScheduleError(
                message: "interval \(seconds) s is outside 1…\(maximumIntervalSeconds) s (one year)"
            )
        }
        return .interval(seconds: seconds)
    }

    /// A cron expression read in the time zone named `timeZone` (an IANA name such as
    /// `Europe/Berlin`; `UTC` when `nil`).
    public static func cron(_ expression: String, timeZone: String?) throws(ScheduleError) -> RecurrenceSchedule {
        let name = timeZone ?? "UTC"
        guard name.utf8.count <= 64, let zone = TimeZone(identifier: name) else {
            throw ScheduleError(
                message: "unknown time zone \"\(name.prefix(64))\": use an IANA name such as Europe/Berlin"
            )
        }
        return .cron(try CronExpression(parsing: expression), timeZone: zone)
    }

    /// The JSON text stored in `jobs.schedule`.
    public var jsonText: String {
        switch self {
        case .interval(let seconds):
            return #"{"every_seconds":\#(seconds)}"#
        case .cron(let expression, let timeZone):
            return
                #"{"cron":\#(JSONText.quote(expression.description)),"time_zone":\#(JSONText.quote(timeZone.identifier))}"#
        }
    }

    /// Reads what ``jsonText`` wrote, with the one JSON grammar.
    public init(jsonText: String) throws(ScheduleError) {
        guard let value = try? JSONValue(parsing: Array(jsonText.utf8)), case .object(let fields) = value else {
            throw ScheduleError(message: "a schedule must be a JSON object")
        }
        switch (fields["every_seconds"], fields["cron"]) {
        case (.integer(let seconds)?, _):
            self = try .every(seconds: seconds)
        case (.double(let seconds)?, _):
            guard let whole = Int64(exactly: seconds.rounded(.towardZero)) else {
                throw ScheduleError(message: "every_seconds \(seconds) is beyond any interval: store whole seconds")
            }
            self = try .every(seconds: whole)
        case (_, .string(let expression)?):
            self = try .cron(expression, timeZone: fields["time_zone"]?.stringValue)
        default:
            throw ScheduleError(message: #"a schedule needs "every_seconds" or "cron" (with an optional "time_zone")"#)
        }
    }
}
