import CHeraldShims
import Glibc
import HeraldCore

/// An IPv4 or IPv6 address and port, as the kernel takes it (a copy of a `sockaddr_in`/`_in6`).
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// The raw `sockaddr` bytes.
    let bytes: [UInt8]
    /// The numeric host (`127.0.0.1`, `::1`).
    public let host: String
    /// The port.
    public let port: Int

    /// Copies the address at `pointer`; nil for families other than IPv4 and IPv6.
    init?(_ pointer: UnsafePointer<sockaddr>, length: Int) {
        let family = Int32(pointer.pointee.sa_family)
        guard family == AF_INET || family == AF_INET6 else { return nil }
        bytes = Array(UnsafeRawBufferPointer(start: UnsafeRawPointer(pointer), count: length))
        var text = [CChar](repeating: 0, count: 64)
        let port = cherald_address_to_string(pointer, &text, text.count)
        guard port >= 0 else { return nil }
        self.host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        self.port = Int(port)
    }

    /// The address family (`AF_INET` or `AF_INET6`).
    var family: Int32 {
        bytes.withUnsafeBytes { Int32($0.load(as: sockaddr.self).sa_family) }
    }

    /// True for IPv6.
    public var isIPv6: Bool { family == AF_INET6 }

    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Calls `body` with the address as a `sockaddr` pointer and its length.
    func withSockAddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> T) rethrows -> T {
        try bytes.withUnsafeBytes { raw in
            try body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
    }

    /// Resolves `host` and `port` with getaddrinfo on the calling thread (blocking).
    /// - Parameter passive: for binding (`AI_PASSIVE`): an empty host means every address.
    static func resolveBlocking(host: String, port: Int, passive: Bool) throws(ChannelError) -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = passive ? AI_PASSIVE : 0
        var result: UnsafeMutablePointer<addrinfo>?
        let status =
            host.isEmpty && passive
            ? getaddrinfo(nil, String(port), &hints, &result)
            : getaddrinfo(host, String(port), &hints, &result)
        guard status == 0 else {
            let reason = status == EAI_SYSTEM ? String(cString: strerror(errno)) : String(cString: gai_strerror(status))
            throw ChannelError(code: .nameResolution, message: "cannot resolve \(host): \(reason)")
        }
        defer { freeaddrinfo(result) }
        var addresses: [SocketAddress] = []
        var cursor = result
        while let info = cursor {
            if let pointer = info.pointee.ai_addr,
                let address = SocketAddress(pointer, length: Int(info.pointee.ai_addrlen)),
                !addresses.contains(address)
            {
                addresses.append(address)
            }
            cursor = info.pointee.ai_next
        }
        guard !addresses.isEmpty else {
            throw ChannelError(code: .nameResolution, message: "cannot resolve \(host): no addresses")
        }
        return addresses
    }
}

/// DNS resolution off Swift's cooperative pool.
///
/// Each call performs a fresh `getaddrinfo` (glibc does not cache; Apple asks for an uncached
/// lookup before each new APNs connection) on a small dedicated ``BlockingExecutor``.
public enum Resolver {
    private static let executor = BlockingExecutor(name: "herald-dns", threadCount: 2)

    /// Resolves `host` (a name or a numeric address) for a TCP connection to `port`.
    /// - Returns: the addresses in the order getaddrinfo prefers them (RFC 6724), without duplicates.
    /// - Throws: ``ChannelError`` with code ``ChannelError/Code/nameResolution``.
    public static func resolve(host: String, port: Int) async throws -> [SocketAddress] {
        try await executor.run { try SocketAddress.resolveBlocking(host: host, port: port, passive: false) }
    }
}
