/// Durations as people write them: `10s`, `5m`, `1h`, `2d`, or combined, `1h30m`.
public enum DurationText {
    /// The whole seconds of `text`; `nil` when it is not a duration.
    public static func seconds(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 32 else { return nil }
        var total: Int64 = 0
        var number: Int64?
        for byte in text.utf8 {
            if (0x30...0x39).contains(byte) {
                let (product, overflow) = (number ?? 0).multipliedReportingOverflow(by: 10)
                guard !overflow else { return nil }
                number = product + Int64(byte - 0x30)
                continue
            }
            let unit: Int64
            switch byte {
            case UInt8(ascii: "s"): unit = 1
            case UInt8(ascii: "m"): unit = 60
            case UInt8(ascii: "h"): unit = 3_600
            case UInt8(ascii: "d"): unit = 86_400
            default: return nil
            }
            guard let value = number, value <= 1_000_000_000 else { return nil }
            total += value * unit
            number = nil
        }
        guard number == nil, total <= 1_000_000_000_000 else { return nil }
        return total
    }

    /// `seconds` written back as the largest exact units, `1h30m`.
    public static func text(_ seconds: Int64) -> String {
        guard seconds > 0 else { return "0s" }
        var rest = seconds
        var text = ""
        for (unit, suffix) in [(Int64(86_400), "d"), (3_600, "h"), (60, "m"), (1, "s")] where rest >= unit {
            text += "\(rest / unit)\(suffix)"
            rest %= unit
        }
        return text
    }
}
