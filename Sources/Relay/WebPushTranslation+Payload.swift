import HeraldCore
import HeraldCrypto

extension WebPushTranslation {
    /// The JSON the Feditext/Metatext notification service extensions decode, built by hand:
    /// the bytes `JSONEncoder` gives with `.sortedKeys` and `.withoutEscapingSlashes`, without its
    /// cost (it and the base64 step were most of a relay request's CPU time).
    ///
    /// `{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"e":…,"i":…,`
    /// `"k":…,"m":…,"s":…}`, with `k` and `s` only when given.
    static func payload(encoding: String, id: String, body: [UInt8], salt: String?, dh: String?) -> [UInt8] {
        // Sized first, then written once into uninitialized memory (docs/PERFORMANCE.md).
        var size =
            prefix.utf8CodeUnitCount + JSONText.quotedCount(encoding) + 5 + JSONText.quotedCount(id) + 6
            + Base64URL.encodedCount(body.count, padded: true) + 2
        if let dh { size += 5 + JSONText.quotedCount(dh) }
        if let salt { size += 5 + JSONText.quotedCount(salt) }
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

    /// `value` as a JSON string literal, escaped as `JSONEncoder` escapes it.
    mutating func appendQuoted(_ value: String) {
        count = JSONText.write(quoted: value, into: buffer, at: count)
    }

    /// `bytes` in base64 with the URL-safe alphabet and `=` padding, as the iOS extensions decode `m`.
    mutating func appendURLSafeBase64(_ input: UnsafeBufferPointer<UInt8>) {
        count = Base64URL.encode(input, into: buffer, at: count, padded: true)
    }
}
