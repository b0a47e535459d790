public import Foundation
import HeraldCore

/// Fast `apns-id` values: Foundation's `UUID()` reads /dev/urandom (open, read, close) and its
/// string conversions go through `snprintf`/`sscanf`, which together cost more than the rest of a
/// push on the send path. An `apns-id` needs to be unique, not secret.
public enum APNSIdentifier {
    /// A version-4-shaped UUID, unique within this process (see `HeraldCore.RequestIdentifier`).
    public static func next() -> UUID {
        RequestIdentifier.nextUUID()
    }

    /// `uuid` as a canonical lowercase string (8-4-4-4-12).
    public static func lowercaseString(_ uuid: UUID) -> String {
        RequestIdentifier.lowercaseString(uuid)
    }

    /// Parses a canonical UUID string in either case; `nil` for anything else.
    public static func parse(_ text: String) -> UUID? {
        var text = text
        return text.withUTF8 { parse(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// ``parse(_:)`` from UTF-8 bytes (a response header value read in place).
    static func parse(bytes utf8: UnsafeRawBufferPointer) -> UUID? {
        guard utf8.count == 36 else { return nil }
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let parsed = withUnsafeMutableBytes(of: &uuid) { bytes -> Bool in
            var out = 0
            var index = 0
            while index < 36 {
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard utf8[index] == UInt8(ascii: "-") else { return false }
                    index += 1
                    continue
                }
                let high = hexValue(utf8[index])
                let low = hexValue(utf8[index + 1])
                guard high | low < 16 else { return false }
                bytes[out] = high << 4 | low
                out += 1
                index += 2
            }
            return true
        }
        return parsed ? UUID(uuid: uuid) : nil
    }

    /// The value of a hexadecimal digit, or 0xFF.
    @inline(__always)
    private static func hexValue(_ character: UInt8) -> UInt8 {
        let digit = character &- UInt8(ascii: "0")
        if digit < 10 { return digit }
        let letter = (character | 0x20) &- UInt8(ascii: "a")
        return letter < 6 ? letter + 10 : 0xFF
    }
}
