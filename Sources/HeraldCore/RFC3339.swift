public import Foundation
import Glibc

/// RFC 3339 UTC timestamps, the API's time format (DESIGN.md, HTTP API conventions).
public enum RFC3339 {
    /// `2026-11-29T12:30:00Z`, or with milliseconds (truncated, as Foundation's ISO 8601 style
    /// does) when `fractional`.
    ///
    /// Every log line carries one, so years 1600 to 9999 are written digit by digit from
    /// `gmtime_r` (docs/PERFORMANCE.md); Foundation's format style handles the rest (and keeps
    /// its Julian calendar before 1582).
    public static func string(from date: Date, fractional: Bool = false) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded(.down)
        guard milliseconds.magnitude < 2.5e17 else { return foundationString(from: date, fractional: fractional) }
        let total = Int(milliseconds)
        var seconds = total.quotientAndRemainder(dividingBy: 1000)
        if seconds.remainder < 0 { seconds = (seconds.quotient - 1, seconds.remainder + 1000) }
        var time = time_t(seconds.quotient)
        var fields = tm()
        guard gmtime_r(&time, &fields) != nil, (1600...9999).contains(Int(fields.tm_year) + 1900) else {
            return foundationString(from: date, fractional: fractional)
        }
        let count = fractional ? 24 : 20
        return String(unsafeUninitializedCapacity: count) { buffer in
            func put(_ value: Int, digits: Int, at offset: Int) {
                var rest = value
                for index in stride(from: offset + digits - 1, through: offset, by: -1) {
                    buffer[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
            }
            put(Int(fields.tm_year) + 1900, digits: 4, at: 0)
            buffer[4] = UInt8(ascii: "-")
            put(Int(fields.tm_mon) + 1, digits: 2, at: 5)
            buffer[7] = UInt8(ascii: "-")
            put(Int(fields.tm_mday), digits: 2, at: 8)
            buffer[10] = UInt8(ascii: "T")
            put(Int(fields.tm_hour), digits: 2, at: 11)
            buffer[13] = UInt8(ascii: ":")
            put(Int(fields.tm_min), digits: 2, at: 14)
            buffer[16] = UInt8(ascii: ":")
            put(Int(fields.tm_sec), digits: 2, at: 17)
            if fractional {
                buffer[19] = UInt8(ascii: ".")
                put(seconds.remainder, digits: 3, at: 20)
            }
            buffer[count - 1] = UInt8(ascii: "Z")
            return count
        }
    }

    private static func foundationString(from date: Date, fractional: Bool) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: fractional, timeZone: .gmt))
    }

    /// Parses RFC 3339 with or without fractional seconds and with any offset; `nil` otherwise.
    public static func date(from string: String) -> Date? {
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(string) { return date }
        return try? Date.ISO8601FormatStyle().parse(string)
    }
}
