import Foundation

/// Base64 with the URL- and filename-safe alphabet (RFC 4648 §5), as JWTs, VAPID keys,
/// WebPush subscriptions and the relay's payload use it.
public enum Base64URL {
    private static let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

    /// Encodes `bytes` with `-` and `_` for `+` and `/`; without `=` padding (the JWT form) unless
    /// `padded`.
    public static func encode(_ bytes: [UInt8], padded: Bool = false) -> String {
        String(unsafeUninitializedCapacity: encodedCount(bytes.count, padded: padded)) { output in
            bytes.withUnsafeBufferPointer { encode($0, into: output, at: 0, padded: padded) }
        }
    }

    /// The characters ``encode(_:into:at:padded:)`` writes for `byteCount` bytes.
    public static func encodedCount(_ byteCount: Int, padded: Bool) -> Int {
        padded ? (byteCount + 2) / 3 * 4 : (byteCount * 4 + 2) / 3
    }

    /// Writes `input` encoded into `output` from `offset`, for callers that size their output
    /// once with ``encodedCount(_:padded:)``; returns the offset after the last character.
    ///
    /// - Precondition: `output` holds ``encodedCount(_:padded:)`` bytes from `offset`.
    @discardableResult
    public static func encode(
        _ input: UnsafeBufferPointer<UInt8>,
        into output: UnsafeMutableBufferPointer<UInt8>,
        at offset: Int,
        padded: Bool
    ) -> Int {
        let needed = encodedCount(input.count, padded: padded)
        precondition(offset >= 0 && offset + needed <= output.count, "base64url output overflows its buffer")
        let table = alphabet.utf8Start
        var index = 0
        var position = offset
        while index + 3 <= input.count {
            let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            output[position] = table[Int(chunk >> 18)]
            output[position + 1] = table[Int(chunk >> 12 & 0x3F)]
            output[position + 2] = table[Int(chunk >> 6 & 0x3F)]
            output[position + 3] = table[Int(chunk & 0x3F)]
            index += 3
            position += 4
        }
        let rest = input.count - index
        if rest > 0 {
            let chunk = UInt32(input[index]) << 16 | (rest == 2 ? UInt32(input[index + 1]) << 8 : 0)
            output[position] = table[Int(chunk >> 18)]
            output[position + 1] = table[Int(chunk >> 12 & 0x3F)]
            position += 2
            if rest == 2 {
                output[position] = table[Int(chunk >> 6 & 0x3F)]
                position += 1
            }
            if padded {
                for _ in rest..<3 {
                    output[position] = UInt8(ascii: "=")
                    position += 1
                }
            }
        }
        return position
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
