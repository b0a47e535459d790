#if canImport(Glibc)
    import Glibc
#endif

/// The key a per-address limit counts a client under: its IPv4 address, or the /64 prefix of its
/// IPv6 address (one subscriber usually holds a whole /64, so counting single IPv6 addresses
/// would let one client rotate through billions of them).
public enum ClientAddress {
    /// `203.0.113.7` → itself; `2001:db8:1:2:3:4:5:6` → `2001:db8:1:2::/64`; anything else as given.
    public static func rateLimitKey(_ address: String) -> String {
        guard address.utf8.contains(UInt8(ascii: ":")) else { return address }
        var parsed = in6_addr()
        guard inet_pton(AF_INET6, address, &parsed) == 1 else { return address }
        let groups = withUnsafeBytes(of: &parsed) { bytes in
            (0..<4).map { String(UInt16(bytes[$0 * 2]) << 8 | UInt16(bytes[$0 * 2 + 1]), radix: 16) }
        }
        return groups.joined(separator: ":") + "::/64"
    }
}
