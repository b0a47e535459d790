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
        RequestIdentifier.uuid(text)
    }

    /// ``parse(_:)`` from UTF-8 bytes (a response header value read in place).
    static func parse(bytes utf8: UnsafeRawBufferPointer) -> UUID? {
        RequestIdentifier.uuid(bytes: utf8)
    }
}
