import Glibc
import HTTPRouting

/// IPv4/IPv6 socket addresses: parsing the configured host and describing a client.
enum SocketAddressConversion {
    /// A bindable address for `host` (numeric IPv4 or IPv6, or `localhost`) and `port`.
    enum Bind {
        case v4(sockaddr_in)
        case v6(sockaddr_in6)
    }

    static func bind(host: String, port: UInt16) -> Bind? {
        let host = host == "localhost" ? "127.0.0.1" : host
        var v4 = sockaddr_in()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            return .v4(v4)
        }
        var v6 = sockaddr_in6()
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if inet_pton(AF_INET6, bare, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            return .v6(v6)
        }
        return nil
    }

    /// The IP address in `address` as text (IPv4-mapped IPv6 shown as IPv4); `unknown` when absent.
    static func describe(_ address: UnsafePointer<sockaddr>?) -> String {
        guard let address else { return "unknown" }
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                dottedQuad(v4.pointee.sin_addr)
            }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
                var ip = v6.pointee.sin6_addr
                guard inet_ntop(AF_INET6, &ip, &buffer, socklen_t(buffer.count)) != nil else { return "unknown" }
                let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                return text.hasPrefix("::ffff:") && text.contains(".") ? String(text.dropFirst(7)) : text
            }
        default:
            return "unknown"
        }
    }

    /// `a.b.c.d`, as `inet_ntop` writes it, without its buffer (this runs for every request).
    static func dottedQuad(_ address: in_addr) -> String {
        withUnsafeBytes(of: address.s_addr) { octets in
            String(unsafeUninitializedCapacity: 15) { out in
                var count = 0
                for (position, octet) in octets.enumerated() {
                    if position > 0 {
                        out[count] = UInt8(ascii: ".")
                        count += 1
                    }
                    if octet >= 100 {
                        out[count] = UInt8(ascii: "0") + octet / 100
                        count += 1
                    }
                    if octet >= 10 {
                        out[count] = UInt8(ascii: "0") + octet / 10 % 10
                        count += 1
                    }
                    out[count] = UInt8(ascii: "0") + octet % 10
                    count += 1
                }
                return count
            }
        }
    }
}
