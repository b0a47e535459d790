import CHeraldShims
import Glibc

/// An IPv4 or IPv6 address, as the destination policy classifies it.
public enum WebhookAddress: Sendable, Hashable, CustomStringConvertible {
    /// The four bytes as one number, most significant first (`127.0.0.1` is `0x7F00_0001`).
    case v4(UInt32)
    /// The sixteen bytes, in network order.
    case v6([UInt8])

    public var description: String {
        switch self {
        case .v4(let value):
            return [24, 16, 8, 0].map { String((value >> UInt32($0)) & 0xFF) }.joined(separator: ".")
        case .v6(let bytes):
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            var address = in6_addr()
            withUnsafeMutableBytes(of: &address) { raw in
                for index in 0..<16 { raw[index] = bytes[index] }
            }
            guard inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil else { return "?" }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// Reads the numeric address text of a host: an IPv6 literal (with or without brackets, an
    /// optional `%zone`) or an IPv4 literal in any spelling `inet_aton` and so getaddrinfo and
    /// curl accept (`127.0.0.1`, `127.1`, `2130706433`, `0x7f.1`, `0177.0.0.1`). `nil` for a
    /// name.
    public init?(literal host: String) {
        var text = Substring(host)
        if text.hasPrefix("["), text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        if text.contains(":") {
            if let percent = text.firstIndex(of: "%") { text = text[..<percent] }
            guard let bytes = Self.parseIPv6(String(text)) else { return nil }
            self = .v6(bytes)
        } else if let value = Self.parseIPv4(Array(text.utf8)) {
            self = .v4(value)
        } else {
            return nil
        }
    }

    /// Copies the address of an `AF_INET` or `AF_INET6` socket address; `nil` for any other
    /// family or a length too short for it.
    init?(socketAddress pointer: UnsafePointer<sockaddr>, length: Int) {
        let raw = UnsafeRawPointer(pointer)
        switch Int32(pointer.pointee.sa_family) {
        case AF_INET where length >= MemoryLayout<sockaddr_in>.size:
            let bytes = (0..<4).map { raw.load(fromByteOffset: 4 + $0, as: UInt8.self) }
            self = .v4(bytes.reduce(0) { $0 << 8 | UInt32($1) })
        case AF_INET6 where length >= MemoryLayout<sockaddr_in6>.size:
            self = .v6((0..<16).map { raw.load(fromByteOffset: 8 + $0, as: UInt8.self) })
        default:
            return nil
        }
    }

    /// `inet_aton`'s grammar: one to four parts separated by dots, each decimal, octal (a
    /// leading `0`) or hexadecimal (`0x`); every part but the last is one byte, the last fills
    /// the remaining bytes. An optional trailing dot is not accepted (glibc refuses it too).
    static func parseIPv4(_ text: [UInt8]) -> UInt32? {
        guard !text.isEmpty, text.count <= 64 else { return nil }
        let parts = text.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        var values: [UInt64] = []
        for part in parts {
            guard let value = parseIPv4Part(Array(part)) else { return nil }
            values.append(value)
        }
        var result: UInt64 = 0
        for value in values.dropLast() {
            guard value <= 0xFF else { return nil }
            result = result << 8 | value
        }
        let lastBits = UInt64(8 * (5 - values.count))
        guard let last = values.last, last < (1 << lastBits) else { return nil }
        result = result << lastBits | last
        return UInt32(result)
    }

    private static func parseIPv4Part(_ part: [UInt8]) -> UInt64? {
        guard !part.isEmpty else { return nil }
        var digits = part[...]
        var radix: UInt64 = 10
        if digits.count >= 2, digits.first == UInt8(ascii: "0"),
            digits[digits.startIndex + 1] | 0x20 == UInt8(ascii: "x")
        {
            radix = 16
            digits = digits.dropFirst(2)
            // strtoul reads "0x" with no digit after it as 0 followed by junk: glibc refuses it.
            guard !digits.isEmpty else { return nil }
        } else if digits.count >= 2, digits.first == UInt8(ascii: "0") {
            radix = 8
            digits = digits.dropFirst()
        }
        var value: UInt64 = 0
        for byte in digits {
            let digit: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt64(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt64(byte - UInt8(ascii: "A") + 10)
            default: return nil
            }
            guard digit < radix else { return nil }
            value = value * radix + digit
            // Beyond 32 bits no part can fit; stop before the arithmetic overflows.
            guard value <= 0xFFFF_FFFF else { return nil }
        }
        return value
    }

    private static func parseIPv6(_ text: String) -> [UInt8]? {
        guard text.utf8.count <= Int(INET6_ADDRSTRLEN) else { return nil }
        var address = in6_addr()
        guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
        return withUnsafeBytes(of: &address) { Array($0) }
    }
}

/// The address ranges a webhook may not reach unless `HERALD_WEBHOOK_ALLOW_PRIVATE=1`: the
/// networks of the host Herald runs on and of its neighbours, never a public receiver.
public enum WebhookAddressRange: String, Sendable, Hashable, CaseIterable {
    case loopback
    /// RFC 1918: 10/8, 172.16/12, 192.168/16.
    case privateNetwork = "private network"
    /// 169.254/16 (where cloud metadata services answer), fe80::/10.
    case linkLocal = "link-local"
    /// 100.64/10, RFC 6598.
    case carrierGradeNAT = "carrier-grade NAT"
    /// fc00::/7, and the deprecated site-local fec0::/10.
    case uniqueLocal = "unique-local"
    /// 0.0.0.0/8 and `::`: on Linux a connection to these reaches the host itself.
    case unspecified
    case multicast
    /// 255.255.255.255.
    case broadcast
    /// Other special-purpose ranges no receiver is on: 192.0.0/24, 198.18/15, 240/4, 100::/64,
    /// the local-use NAT64 prefix 64:ff9b:1::/48.
    case reserved

    /// The words a message uses: "a loopback address".
    public var phrase: String {
        switch self {
        case .loopback: return "a loopback address"
        case .privateNetwork: return "a private network address (RFC 1918)"
        case .linkLocal: return "a link-local address"
        case .carrierGradeNAT: return "a carrier-grade NAT address (100.64.0.0/10)"
        case .uniqueLocal: return "a unique-local IPv6 address"
        case .unspecified: return "an unspecified address"
        case .multicast: return "a multicast address"
        case .broadcast: return "the broadcast address"
        case .reserved: return "a reserved address"
        }
    }
}

extension WebhookAddress {
    /// The refused range the address is in, or `nil` for an address a public receiver may have.
    /// IPv6 forms that carry an IPv4 address (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`,
    /// translated `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`, Teredo
    /// `2001::/32`) are judged by the IPv4 address they lead to.
    public var refusedRange: WebhookAddressRange? {
        switch self {
        case .v4(let value): return Self.refusedRange(v4: value)
        case .v6(let bytes): return Self.refusedRange(v6: bytes)
        }
    }

    private static func refusedRange(v4 value: UInt32) -> WebhookAddressRange? {
        func within(_ base: UInt32, _ bits: UInt32) -> Bool {
            let mask: UInt32 = bits == 0 ? 0 : ~UInt32(0) << (32 - bits)
            return value & mask == base
        }
        if value == 0xFFFF_FFFF { return .broadcast }
        if within(0x0000_0000, 8) { return .unspecified }
        if within(0x7F00_0000, 8) { return .loopback }
        if within(0x0A00_0000, 8) || within(0xAC10_0000, 12) || within(0xC0A8_0000, 16) { return .privateNetwork }
        if within(0xA9FE_0000, 16) { return .linkLocal }
        if within(0x6440_0000, 10) { return .carrierGradeNAT }
        if within(0xE000_0000, 4) { return .multicast }
        if within(0xF000_0000, 4) || within(0xC000_0000, 24) || within(0xC612_0000, 15) { return .reserved }
        return nil
    }

    private static func refusedRange(v6 bytes: [UInt8]) -> WebhookAddressRange? {
        guard bytes.count == 16 else { return .reserved }
        func embeddedV4(at offset: Int) -> UInt32 {
            bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
        }
        let zeroes = { (range: Range<Int>) in bytes[range].allSatisfy { $0 == 0 } }
        if zeroes(0..<16) { return .unspecified }
        if zeroes(0..<15), bytes[15] == 1 { return .loopback }
        // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible, deprecated).
        if zeroes(0..<10), bytes[10] == 0xFF, bytes[11] == 0xFF { return refusedRange(v4: embeddedV4(at: 12)) }
        if zeroes(0..<12) { return refusedRange(v4: embeddedV4(at: 12)) }
        // ::ffff:0:a.b.c.d (SIIT translated).
        if zeroes(0..<8), bytes[8] == 0xFF, bytes[9] == 0xFF, zeroes(10..<12) {
            return refusedRange(v4: embeddedV4(at: 12))
        }
        // 64:ff9b::/96 (NAT64, RFC 6052) and the local-use 64:ff9b:1::/48 (RFC 8215).
        if bytes[0] == 0x00, bytes[1] == 0x64, bytes[2] == 0xFF, bytes[3] == 0x9B {
            if zeroes(4..<12) { return refusedRange(v4: embeddedV4(at: 12)) }
            if bytes[4] == 0x00, bytes[5] == 0x01 { return .reserved }
        }
        // 2002:a.b.c.d::/48 (6to4).
        if bytes[0] == 0x20, bytes[1] == 0x02 { return refusedRange(v4: embeddedV4(at: 2)) }
        // 2001:0::/32 (Teredo): the server at bytes 4-7, the client obfuscated at 12-15.
        if bytes[0] == 0x20, bytes[1] == 0x01, bytes[2] == 0x00, bytes[3] == 0x00 {
            return refusedRange(v4: embeddedV4(at: 4)) ?? refusedRange(v4: ~embeddedV4(at: 12))
        }
        // 100::/64 (discard-only).
        if bytes[0] == 0x01, zeroes(1..<8) { return .reserved }
        if bytes[0] == 0xFF { return .multicast }
        if bytes[0] == 0xFE, bytes[1] & 0xC0 == 0x80 { return .linkLocal }
        if bytes[0] == 0xFE, bytes[1] & 0xC0 == 0xC0 { return .uniqueLocal }
        if bytes[0] & 0xFE == 0xFC { return .uniqueLocal }
        return nil
    }
}
