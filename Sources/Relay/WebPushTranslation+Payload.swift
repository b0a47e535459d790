extension WebPushTranslation {
    /// The JSON the Feditext/Metatext notification service extensions decode, built by hand:
    /// the bytes `JSONEncoder` gives with `.sortedKeys` and `.withoutEscapingSlashes`, without its
    /// cost (it and the base64 step were most of a relay request's CPU time).
    ///
    /// `{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"e":…,"i":…,`
    /// `"k":…,"m":…,"s":…}`, with `k` and `s` only when given.
    static func payload(encoding: String, id: String, body: [UInt8], salt: String?, dh: String?) -> [UInt8] {
        // Measured first, then written once into an uninitialized array: appending grew and
        // checked capacity per byte, and zero-filling the base64 part first wrote it twice.
        var size =
            prefix.utf8CodeUnitCount + quotedCount(encoding) + 5 + quotedCount(id) + 6 + (body.count + 2) / 3 * 4 + 2
        if let dh { size += 5 + quotedCount(dh) }
        if let salt { size += 5 + quotedCount(salt) }
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, written in
            var out = PayloadWriter(buffer)
            out.append(prefix)
            out.appendQuoted(encoding)
            out.append(#","i":"#)
            out.appendQuoted(id)
            if let dh {
                out.append(#","k":"#)
                out.appendQuoted(dh)
            }
            out.append(#","m":""#)
            body.withUnsafeBufferPointer { out.appendURLSafeBase64($0) }
            out.append("\"")
            if let salt {
                out.append(#","s":"#)
                out.appendQuoted(salt)
            }
            out.append("}")
            precondition(out.count == size, "relay payload size mismatch")
            written = out.count
        }
    }

    private static let prefix: StaticString =
        #"{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"e":"#

    /// The bytes of `value` as a JSON string literal, quotes included (see ``PayloadWriter/appendQuoted(_:)``).
    static func quotedCount(_ value: String) -> Int {
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

    /// `value` as a JSON string literal, escaped as `JSONEncoder` escapes it (for tests of the
    /// escaping; the payload writes in place).
    static func appendString(_ value: String, to out: inout [UInt8]) {
        out.append(
            contentsOf: [UInt8](unsafeUninitializedCapacity: quotedCount(value)) { buffer, written in
                var writer = PayloadWriter(buffer)
                writer.appendQuoted(value)
                written = writer.count
            }
        )
    }
}

/// Writes a relay payload into memory sized for it beforehand.
struct PayloadWriter {
    private let buffer: UnsafeMutableBufferPointer<UInt8>
    private(set) var count = 0

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        self.buffer = buffer
    }

    mutating func append(_ text: StaticString) {
        let bytes = UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        precondition(count + bytes.count <= buffer.count, "relay payload overflow")
        _ = UnsafeMutableBufferPointer(rebasing: buffer[count...]).initialize(fromContentsOf: bytes)
        count += bytes.count
    }

    private mutating func append(byte: UInt8) {
        precondition(count < buffer.count, "relay payload overflow")
        buffer[count] = byte
        count += 1
    }

    /// `value` as a JSON string literal, escaped as `JSONEncoder` escapes it: `"` and `\`, the
    /// short forms `\b \t \n \f \r`, other control bytes as `\u00xx`; everything else verbatim.
    mutating func appendQuoted(_ value: String) {
        let hex: StaticString = "0123456789abcdef"
        append(byte: UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                append(byte: UInt8(ascii: "\\"))
                append(byte: byte)
            case 0x08: append(#"\b"#)
            case 0x09: append(#"\t"#)
            case 0x0A: append(#"\n"#)
            case 0x0C: append(#"\f"#)
            case 0x0D: append(#"\r"#)
            case 0x00..<0x20:
                append(#"\u00"#)
                append(byte: hex.utf8Start[Int(byte >> 4)])
                append(byte: hex.utf8Start[Int(byte & 0x0F)])
            default:
                append(byte: byte)
            }
        }
        append(byte: UInt8(ascii: "\""))
    }

    /// `bytes` in base64 with the URL-safe alphabet and `=` padding.
    mutating func appendURLSafeBase64(_ input: UnsafeBufferPointer<UInt8>) {
        let table = WebPushTranslation.urlSafeAlphabet.utf8Start
        let needed = (input.count + 2) / 3 * 4
        precondition(count + needed <= buffer.count, "relay payload overflow")
        var index = 0
        var position = count
        while index + 3 <= input.count {
            let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            buffer[position] = table[Int(chunk >> 18)]
            buffer[position + 1] = table[Int(chunk >> 12 & 0x3F)]
            buffer[position + 2] = table[Int(chunk >> 6 & 0x3F)]
            buffer[position + 3] = table[Int(chunk & 0x3F)]
            index += 3
            position += 4
        }
        let rest = input.count - index
        if rest > 0 {
            let chunk = UInt32(input[index]) << 16 | (rest == 2 ? UInt32(input[index + 1]) << 8 : 0)
            buffer[position] = table[Int(chunk >> 18)]
            buffer[position + 1] = table[Int(chunk >> 12 & 0x3F)]
            buffer[position + 2] = rest == 2 ? table[Int(chunk >> 6 & 0x3F)] : UInt8(ascii: "=")
            buffer[position + 3] = UInt8(ascii: "=")
        }
        count += needed
    }
}
