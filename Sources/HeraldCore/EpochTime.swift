public import Foundation

/// Total conversions between `Date` and whole seconds or milliseconds since 1970: a date too far
/// out for `Int64` (or not a number) gives the nearest representable value instead of trapping.
public enum EpochTime {
    /// The last second of year 9999 (`9999-12-31T23:59:59Z`): the latest time the API accepts as
    /// Unix seconds, and the latest an RFC 3339 time can name.
    public static let maximumSeconds: Int64 = 253_402_300_799

    /// Whole seconds since 1970, rounded down, clamped to `Int64`; `0` for NaN.
    public static func seconds(_ date: Date) -> Int64 {
        clamped(date.timeIntervalSince1970.rounded(.down))
    }

    /// Milliseconds since 1970, clamped to `Int64`; `0` for NaN.
    public static func milliseconds(
        _ date: Date,
        rounding rule: FloatingPointRoundingRule = .toNearestOrAwayFromZero
    ) -> Int64 {
        clamped((date.timeIntervalSince1970 * 1000).rounded(rule))
    }

    /// `value` (already integral) as `Int64`, saturating at the type's bounds.
    public static func clamped(_ value: Double) -> Int64 {
        guard !value.isNaN else { return 0 }
        // 2^63 is the first Double above Int64.max; -2^63 is Int64.min exactly.
        if value >= 0x1p63 { return .max }
        if value <= -0x1p63 { return .min }
        return Int64(value)
    }
}
