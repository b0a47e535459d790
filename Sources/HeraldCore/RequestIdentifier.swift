public import Foundation
import Synchronization

/// Fresh request ids: lower-case version-4-shaped UUIDs, unique within the process.
///
/// Foundation's `UUID()` reads /dev/urandom (open, read, close) for every id; a request id must be
/// unique, not secret, so a random prefix chosen once and a scrambled counter do (as the APNs
/// module's `APNSIdentifier` uses for `apns-id` too).
public enum RequestIdentifier {
    /// A new id, e.g. `5f0c…-…`: 36 characters, lower-case hex and dashes.
    public static func next() -> String {
        lowercaseString(nextUUID())
    }

    /// A version-4-shaped UUID, unique within this process: a random 64-bit prefix chosen once,
    /// and a counter scrambled by SplitMix64 (a bijection, so no two counters give the same id).
    public static func nextUUID() -> UUID {
        let counter = state.counter.wrappingAdd(1, ordering: .relaxed).newValue
        let high = (state.prefix & ~0xF000) | 0x4000  // version 4 in bits 12–15 of time_hi
        let low = (mix(counter) & ~0xC000_0000_0000_0000) | 0x8000_0000_0000_0000  // RFC 4122 variant
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuid) { bytes in
            withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { bytes.copyMemory(from: $0) }
        }
        return UUID(uuid: uuid)
    }

    /// `uuid` as a canonical lower-case string (8-4-4-4-12), without Foundation's `snprintf`.
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

    /// SplitMix64's finaliser: a bijection, so distinct counters give distinct ids.
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
