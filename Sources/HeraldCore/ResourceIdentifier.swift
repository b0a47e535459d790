import CHeraldShims
public import Foundation

/// Ids of the resources Herald hands out (notifications, Live Activities, webhooks, webhook
/// events, wake schedules, jobs): UUIDv7 (RFC 9562, section 5.7) whose 74 random bits are drawn
/// from the kernel's CSPRNG (`getrandom`) for each id.
///
/// Such an id is unguessable: knowing any number of other ids, or any request id, says nothing
/// about it beyond roughly when it was made (its first 48 bits are the Unix time in
/// milliseconds, which also keeps a table's index on ids in creation order). Request ids come
/// from ``RequestIdentifier``, which is cheap and shares nothing with these.
public enum ResourceIdentifier {
    /// A new id for a resource made now.
    public static func next() -> UUID {
        next(at: Date())
    }

    /// A new id whose timestamp is `date` (the resource's creation time as the caller's clock
    /// reads it).
    public static func next(at date: Date) -> UUID {
        var random: (UInt64, UInt16) = (0, 0)
        withUnsafeMutableBytes(of: &random) { bytes in
            // getrandom(2) fails only for bad arguments or a kernel without it (Linux < 3.17):
            // an id that is not random must not be handed out.
            guard cherald_getrandom(bytes.baseAddress, 10) == 0 else {
                fatalError("getrandom failed (errno \(errno)): Herald needs Linux 3.17 or later")
            }
        }
        let milliseconds = UInt64(max(0, (date.timeIntervalSince1970 * 1_000).rounded(.down)))
        return make(milliseconds: milliseconds, randomA: random.1, randomB: random.0)
    }

    /// The UUIDv7 with `milliseconds` (the low 48 bits), the 12 bits of `randomA` and the 62 bits
    /// of `randomB`, with the version (7) and variant (0b10) set.
    static func make(milliseconds: UInt64, randomA: UInt16, randomB: UInt64) -> UUID {
        let high = (milliseconds & 0xFFFF_FFFF_FFFF) << 16 | 0x7000 | UInt64(randomA & 0x0FFF)
        let low = (randomB & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuid) { bytes in
            withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { bytes.copyMemory(from: $0) }
        }
        return UUID(uuid: uuid)
    }

    /// The 74 random bits of a UUIDv7 `id` (12 then 62), for tests and diagnostics.
    public static func randomBits(of id: UUID) -> (a: UInt16, b: UInt64) {
        let (high, low) = withUnsafeBytes(of: id.uuid) { bytes in
            (
                UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }
        return (UInt16(high & 0x0FFF), low & 0x3FFF_FFFF_FFFF_FFFF)
    }
}
