public import Foundation
import Synchronization

/// Fresh request ids: lower-case version-4-shaped UUIDs, unique within the process.
///
/// Foundation's `UUID()` reads /dev/urandom (open, read, close) for every id; a request id must be
/// unique, not secret, so a scrambled counter and a random suffix chosen once do.
public enum RequestIdentifier {
    /// A new id, e.g. `5f0c…-…`: 36 characters, lower-case hex and dashes.
    public static func next() -> String {
        lowercaseString(nextUUID())
    }

    /// A version-4-shaped UUID, unique within this process: a counter scrambled by a bijection of
    /// 60 bits in front (so ids of one process differ from their first characters on, and a short
    /// prefix names one, as with git), then a random 62-bit suffix chosen once per process.
    public static func nextUUID() -> UUID {
        let counter = state.counter.wrappingAdd(1, ordering: .relaxed).newValue
        let scrambled = mix60(counter)
        // The 60 bits around the version nibble (bits 12–15 of the high half): version 4.
        let high = ((scrambled << 4) & 0xFFFF_FFFF_FFFF_0000) | 0x4000 | (scrambled & 0x0FFF)
        let low = (state.suffix & ~0xC000_0000_0000_0000) | 0x8000_0000_0000_0000  // RFC 4122 variant
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

    /// `text` as a UUID: 8-4-4-4-12 hex digits of either case, without Foundation's `sscanf`
    /// (which also reads a sign or spaces inside, so that `UUID(uuidString:)` takes "+f0c2b1e-…"
    /// for 0f0c2b1e-…); `nil` for anything else.
    public static func uuid(_ text: some StringProtocol) -> UUID? {
        if let contiguous = text.utf8.withContiguousStorageIfAvailable({ uuid(bytes: UnsafeRawBufferPointer($0)) }) {
            return contiguous
        }
        return Array(text.utf8).withUnsafeBytes { uuid(bytes: $0) }
    }

    /// ``uuid(_:)`` from UTF-8 bytes (a header value read in place).
    public static func uuid(bytes utf8: UnsafeRawBufferPointer) -> UUID? {
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

    /// SplitMix64's finaliser narrowed to 60 bits: adding a constant, multiplying by an odd
    /// number and xor-shifting right are each invertible modulo 2^60, so distinct counters (below
    /// 2^60 apart) give distinct ids.
    private static func mix60(_ value: UInt64) -> UInt64 {
        let mask: UInt64 = (1 << 60) - 1
        var z = (value &+ 0x9E37_79B9_7F4A_7C15) & mask
        z = ((z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9) & mask
        z = ((z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB) & mask
        return z ^ (z >> 31)
    }

    private final class State: Sendable {
        let suffix: UInt64
        let counter: Atomic<UInt64>

        init() {
            var generator = SystemRandomNumberGenerator()
            suffix = generator.next()
            counter = Atomic(generator.next())
        }
    }

    private static let state = State()
}
