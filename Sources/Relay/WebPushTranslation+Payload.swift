extension WebPushTranslation {
    /// The JSON the Feditext/Metatext notification service extensions decode, built by hand:
    /// the bytes `JSONEncoder` gives with `.sortedKeys` and `.withoutEscapingSlashes`, without its
    /// cost (it and the base64 step were most of a relay request's CPU time).
    ///
    /// `{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"e":…,"i":…,`
    /// `"k":…,"m":…,"s":…}`, with `k` and `s` only when given.
    static func payload(encoding: String, id: String, body: [UInt8], salt: String?, dh: String?) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(
            prefix.utf8.count + 64 + encoding.utf8.count + id.utf8.count + (body.count + 2) / 3 * 4
                + (salt?.utf8.count ?? 0) + (dh?.utf8.count ?? 0)
        )
        out.append(contentsOf: prefix.utf8)
        appendString(encoding, to: &out)
        out.append(contentsOf: #","i":"#.utf8)
        appendString(id, to: &out)
        if let dh {
            out.append(contentsOf: #","k":"#.utf8)
            appendString(dh, to: &out)
        }
        out.append(contentsOf: #","m":""#.utf8)
        appendURLSafeBase64(body, to: &out)
        out.append(UInt8(ascii: "\""))
        if let salt {
            out.append(contentsOf: #","s":"#.utf8)
            appendString(salt, to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    private static let prefix = #"{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"e":"#

    /// `value` as a JSON string literal, escaped as `JSONEncoder` escapes it: `"` and `\`, the
    /// short forms `\b \t \n \f \r`, other control bytes as `\u00xx`; everything else verbatim.
    static func appendString(_ value: String, to out: inout [UInt8]) {
        let hex: StaticString = "0123456789abcdef"
        out.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                out.append(UInt8(ascii: "\\"))
                out.append(byte)
            case 0x08: out.append(contentsOf: #"\b"#.utf8)
            case 0x09: out.append(contentsOf: #"\t"#.utf8)
            case 0x0A: out.append(contentsOf: #"\n"#.utf8)
            case 0x0C: out.append(contentsOf: #"\f"#.utf8)
            case 0x0D: out.append(contentsOf: #"\r"#.utf8)
            case 0x00..<0x20:
                out.append(contentsOf: #"\u00"#.utf8)
                hex.withUTF8Buffer { digits in
                    out.append(digits[Int(byte >> 4)])
                    out.append(digits[Int(byte & 0x0F)])
                }
            default:
                out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
