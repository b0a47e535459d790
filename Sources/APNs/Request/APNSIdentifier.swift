public import Foundation
import Synchronization

/// Fast `apns-id` values: Foundation's `UUID()` reads /dev/urandom (open, read, close) and its
/// string conversions go through `snprintf`/`sscanf`, which together cost more than the rest of a
/// push on the send path. An `apns-id` needs to be unique, not secret.
public enum APNSIdentifier {
    /// A version-4-shaped UUID, unique within this process: a random 64-bit prefix chosen once,
    /// and a counter scrambled by SplitMix64 (a bijection, so no two counters give the same id).
    public static func next() -> UUID {
        let counter = state.counter.wrappingAdd(1, ordering: .relaxed).newValue
        var high = state.prefix
        var low = mix(counter)
        high = (high & ~0xF000) | 0x4000  // version 4 in bits 12–15 of time_hi
        low = (low & ~(0xC000_0000_0000_0000)) | 0x8000_0000_0000_0000  // RFC 4122 variant
        return withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { raw in
            let b = raw.bindMemory(to: UInt8.self)
            return UUID(
                uuid: (
                    b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]
                )
            )
        }
    }

    /// `uuid` as a canonical lowercase string (8-4-4-4-12).
    public static func lowercaseString(_ uuid: UUID) -> String {
        let digits: StaticString = "0123456789abcdef"
        return withUnsafeBytes(of: uuid.uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { out in
                var index = 0
                digits.withUTF8Buffer { hex in
                    for (position, byte) in bytes.enumerated() {
                        if position == 4 || position == 6 || position == 8 || position == 10 {
                            out[index] = UInt8(ascii: "-")
                            index += 1
                        }
                        out[index] = hex[Int(byte >> 4)]
                        out[index + 1] = hex[Int(byte & 0x0F)]
                        index += 2
                    }
                }
                return index
            }
        }
    }

    /// Parses a canonical UUID string in either case; `nil` for anything else.
    public static func parse(_ text: String) -> UUID? {
        let utf8 = Array(text.utf8)
        guard utf8.count == 36 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 16)
        var out = 0
        var index = 0
        while index < 36 {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard utf8[index] == UInt8(ascii: "-") else { return nil }
                index += 1
                continue
            }
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes[out] = high << 4 | low
            out += 1
            index += 2
        }
        let b = bytes
        return UUID(
            uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
        )
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private final class State: Sendable {
        let prefix: UInt64
        let counter: Atomic<UInt64>
        init() {
            var generator = SystemRandomNumberGenerator()
            prefix = generator.next()
            counter = Atomic(generator.next())
        }
    }

    private static let state = State()
}
