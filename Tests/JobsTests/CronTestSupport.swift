import Foundation
import Jobs
import JobsTestSupport
import Testing

/// Fixed dates, zones and formatting shared by the cron tests. Times are written as ISO 8601 with
/// their UTC offset, so an expectation says both the wall-clock time and the instant.
enum CronFixture {
    static let utc = TimeZone(identifier: "UTC")!
    static let berlin = TimeZone(identifier: "Europe/Berlin")!
    static let newYork = TimeZone(identifier: "America/New_York")!

    /// The instant an ISO 8601 timestamp with an offset names, such as `2026-03-29T01:00:00Z`.
    static func date(_ text: String) -> Date {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) {
            return date
        }
        formatter.formatOptions = [.withInternetDateTime]
        guard let date = formatter.date(from: text) else {
            preconditionFailure("bad fixture timestamp \(text)")
        }
        return date
    }

    /// `date` on the wall clock of `timeZone`, with its offset: `2026-03-29T03:00:00+02:00`.
    static func text(_ date: Date, in timeZone: TimeZone) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = timeZone
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    /// The first `count` occurrences after `start`, each found from the previous one, as text in
    /// `timeZone`; stops early at `nil`.
    static func occurrences(
        of expression: String,
        after start: String,
        in timeZone: TimeZone = utc,
        count: Int
    ) throws -> [String] {
        let cron = try CronExpression(parsing: expression)
        var results: [String] = []
        var current = date(start)
        while results.count < count, let next = cron.nextOccurrence(after: current, in: timeZone) {
            results.append(text(next, in: timeZone))
            current = next
        }
        return results
    }

    /// The single next occurrence after `start`, as text in `timeZone`, or `nil`.
    static func next(_ expression: String, after start: String, in timeZone: TimeZone = utc) throws -> String? {
        let cron = try CronExpression(parsing: expression)
        return cron.nextOccurrence(after: date(start), in: timeZone).map { text($0, in: timeZone) }
    }
}
