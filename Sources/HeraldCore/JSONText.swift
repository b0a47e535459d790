/// Minimal JSON text helpers for hand-built output (log lines, metrics labels), where a full
/// `JSONEncoder` round trip would be wasteful.
public enum JSONText {
    /// `value` as a JSON string literal, quotes included.
    ///
    /// Works on UTF-8 bytes: every byte that needs escaping is ASCII, and the bytes of other
    /// characters never look like one, so they are copied as they are.
    public static func quote(_ value: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(value.utf8.count + 8)
        out.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                let digits: StaticString = "0123456789abcdef"
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                digits.withUTF8Buffer { table in
                    out.append(table[Int(byte >> 4)])
                    out.append(table[Int(byte & 0x0F)])
                }
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
        return String(decoding: out, as: UTF8.self)
    }
}
