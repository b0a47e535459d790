import Foundation
import Glibc

/// Plain TCP to 127.0.0.1, for tests that must see what a server does before and after a body.
public enum Loopback {
    /// A TCP port of 127.0.0.1 nothing listens on now, for a server a test starts, stops and
    /// starts again on the same port.
    ///
    /// It is drawn below Linux's ephemeral range (32768–60999 by default), which the kernel never
    /// gives to an outgoing connection: a port from `bind(0)` is an ephemeral one, and under a
    /// full test run another process's connection took one between the probe and the server's
    /// start (PostgreSQL: "could not bind IPv4 address: Address already in use").
    public static func freePort() throws -> Int {
        for _ in 0..<200 {
            let port = Int.random(in: 20_000..<32_768)
            if try canBind(port) { return port }
        }
        throw TrickleError(operation: "bind (no free port in 20000-32767 after 200 tries)", code: EADDRINUSE)
    }

    private static func canBind(_ port: Int) throws -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TrickleError(operation: "socket", code: errno) }
        defer { close(fd) }
        var reuse: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// A connected socket to 127.0.0.1:`port`; the caller closes it.
    public static func connect(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TrickleError(operation: "socket", code: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw TrickleError(operation: "connect", code: code)
        }
        return fd
    }

    /// Sends `head` alone on a new connection and reads until the server closes; reads time out
    /// after 10 s, so a server that waits for a body fails the caller. Runs on a thread of its own.
    public static func exchange(port: Int, _ head: String) async throws -> String {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<String, any Error>) in
            Thread.detachNewThread { continuation.resume(with: Result { try exchangeBlocking(port: port, head) }) }
        }
    }

    private static func exchangeBlocking(port: Int, _ head: String) throws -> String {
        let fd = try connect(port: port)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let bytes = Array(head.utf8)
        guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            throw TrickleError(operation: "send", code: errno)
        }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            if count < 0 {
                // A reset after the answer is a close too.
                if errno == ECONNRESET, !received.isEmpty { break }
                throw TrickleError(operation: "recv (the server neither answered nor closed)", code: errno)
            }
            received.append(contentsOf: chunk[..<count])
        }
        return String(decoding: received, as: UTF8.self)
    }
}
