import HeraldCore

/// One HTTP/2 header field as the APNs client hands it to a transport.
///
/// `neverIndex` asks the HPACK encoder for a literal "never indexed" representation: APNs keeps a
/// small dynamic table, and per-request values (the device-token `:path`, `apns-id`, expiration
/// timestamps) would only evict useful entries (APNS.md §3).
///
/// ``description`` hides the value of `authorization`, so a header list can be logged.
public struct APNSHTTPHeader: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// Lowercase field name (HTTP/2 requires it), pseudo-headers with their leading colon.
    public var name: String
    public var value: String
    public var neverIndex: Bool

    public init(name: String, value: String, neverIndex: Bool = false) {
        self.name = name
        self.value = value
        self.neverIndex = neverIndex
    }

    /// Whether the value is a credential and must not be logged.
    public var isSensitive: Bool { name == "authorization" }

    public var description: String {
        "\(name): \(isSensitive ? "<redacted>" : value)\(neverIndex ? " (never indexed)" : "")"
    }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: ["name": name, "value": isSensitive ? "<redacted>" : value, "neverIndex": neverIndex]
        )
    }
}

extension Array where Element == APNSHTTPHeader {
    /// The value of the first field named `name` (compared case-insensitively), or `nil`.
    public func value(forName name: String) -> String? {
        first { $0.name.equalsIgnoringASCIICase(name) }?.value
    }
}
