import Foundation

/// Base64 with the URL- and filename-safe alphabet (RFC 4648 §5), as JWTs, VAPID keys and
/// WebPush subscriptions use it.
public enum Base64URL {
    /// Encodes `bytes` with `-` and `_` for `+` and `/`, and without `=` padding (JWT form).
    public static func encode(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        while text.last == "=" {
            text.removeLast()
        }
        return String(
            text.map { character in
                switch character {
                case "+": "-"
                case "/": "_"
                default: character
                }
            }
        )
    }

    /// Decodes URL-safe base64, with or without `=` padding. Returns nil for anything else: a
    /// character outside the URL-safe alphabet (including `+`, `/` and whitespace), misplaced or
    /// wrong padding, or an impossible length.
    public static func decode(_ text: String) -> [UInt8]? {
        var standard = [UInt8]()
        standard.reserveCapacity(text.utf8.count + 2)
        var padding = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            guard padding == 0 else {
                return nil  // data after padding
            }
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                standard.append(byte)
            case UInt8(ascii: "-"):
                standard.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"):
                standard.append(UInt8(ascii: "/"))
            default:
                return nil
            }
        }
        let remainder = standard.count % 4
        guard remainder != 1 else {
            return nil
        }
        let expectedPadding = remainder == 0 ? 0 : 4 - remainder
        guard padding == 0 || padding == expectedPadding else {
            return nil
        }
        standard.append(contentsOf: repeatElement(UInt8(ascii: "="), count: expectedPadding))
        guard let data = Data(base64Encoded: Data(standard)) else {
            return nil
        }
        return [UInt8](data)
    }
}
