/// JSON string literals for hand-built output (log lines, error bodies, metrics labels, the relay
/// payload), where a full `JSONEncoder` round trip would be wasteful.
///
/// Escaped as `JSONEncoder` escapes: `"` and `\`, the short forms `\b \t \n \f \r`, other control
/// bytes as `\u00xx`; everything else verbatim. Works on UTF-8 bytes: every byte that needs
/// escaping is ASCII, and the bytes of other characters never look like one.
public enum JSONText {
    /// `value` as a JSON string literal, quotes included.
    public static func quote(_ value: String) -> String {
        String(unsafeUninitializedCapacity: quotedCount(value)) { buffer in
            write(quoted: value, into: buffer, at: 0)
        }
    }

    /// Appends `value` as a JSON string literal, quotes included, to `out`.
    public static func append(quoted value: String, to out: inout [UInt8]) {
        // Most strings need no escape: their bytes go as they are, with no buffer between.
        if value.utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: value.utf8)
            out.append(UInt8(ascii: "\""))
            return
        }
        let size = quotedCount(value)
        out.append(
            contentsOf: [UInt8](unsafeUninitializedCapacity: size) { buffer, written in
                written = write(quoted: value, into: buffer, at: 0)
            }
        )
    }

    /// The bytes ``write(quoted:into:at:)`` writes for `value`, quotes included.
    public static func quotedCount(_ value: String) -> Int {
        var count = 2
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x08, 0x09, 0x0A, 0x0C, 0x0D: count += 2
            case 0x00..<0x20: count += 6
            default: count += 1
            }
        }
        return count
    }

    /// Writes `value` as a JSON string literal into `buffer` from `offset`, for callers that size
    /// their output once with ``quotedCount(_:)``; returns the offset after the closing quote.
    ///
    /// - Precondition: `buffer` holds ``quotedCount(_:)`` bytes from `offset`.
    @discardableResult
    public static func write(
        quoted value: String,
        into buffer: UnsafeMutableBufferPointer<UInt8>,
        at offset: Int
    )
        -> Int
    {
        let hex: StaticString = "0123456789abcdef"
        var position = offset
        func put(_ byte: UInt8) {
            precondition(position < buffer.count, "JSON string overflows its buffer")
            buffer[position] = byte
            position += 1
        }
        put(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                put(UInt8(ascii: "\\"))
                put(byte)
            case 0x08: put(UInt8(ascii: "\\")); put(UInt8(ascii: "b"))
            case 0x09: put(UInt8(ascii: "\\")); put(UInt8(ascii: "t"))
            case 0x0A: put(UInt8(ascii: "\\")); put(UInt8(ascii: "n"))
            case 0x0C: put(UInt8(ascii: "\\")); put(UInt8(ascii: "f"))
            case 0x0D: put(UInt8(ascii: "\\")); put(UInt8(ascii: "r"))
            case 0x00..<0x20:
                put(UInt8(ascii: "\\"))
                put(UInt8(ascii: "u"))
                put(UInt8(ascii: "0"))
                put(UInt8(ascii: "0"))
                put(hex.utf8Start[Int(byte >> 4)])
                put(hex.utf8Start[Int(byte & 0x0F)])
            default:
                put(byte)
            }
        }
        put(UInt8(ascii: "\""))
        return position
    }
}
