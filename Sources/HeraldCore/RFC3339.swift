public import Foundation

/// RFC 3339 UTC timestamps, the API's time format (DESIGN.md, HTTP API conventions).
public enum RFC3339 {
    /// `2026-11-29T12:30:00Z`, or with milliseconds when `fractional`.
    public static func string(from date: Date, fractional: Bool = false) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: fractional, timeZone: .gmt))
    }

    /// Parses RFC 3339 with or without fractional seconds and with any offset; `nil` otherwise.
    public static func date(from string: String) -> Date? {
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(string) { return date }
        return try? Date.ISO8601FormatStyle().parse(string)
    }
}
