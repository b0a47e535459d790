import APNsSimulator
import Foundation
import Glibc
import Relay
import Testing

/// The relay refuses a body WebPush forbids on its `Content-Length`, before reading it.
@Suite("Relay: refusals before the body")
struct RelayEarlyRefusalTests {
    @Test("a push announcing more than 4096 bytes is 413 at once, and the connection closes")
    func oversizedPushIsRefusedOnItsHeaders() async throws {
        try await RelayHarness.with { relay in
            let head =
                "POST /push/\(randomToken())/1 HTTP/1.1\r\nHost: x\r\nContent-Encoding: aes128gcm\r\n"
                + "Content-Length: 900000\r\n\r\n"
            let answer = try await Self.exchange(port: relay.port, head)
            #expect(answer.hasPrefix("HTTP/1.1 413"), "answer: \(answer)")
            #expect(answer.contains("\"error\""))
            #expect(answer.lowercased().contains("connection: close"))
            #expect(relay.simulator.deliveries().isEmpty)
        }
    }

    struct SocketFailure: Error, CustomStringConvertible {
        var operation: String
        var code: Int32
        var description: String { "\(operation) failed: \(String(cString: strerror(code)))" }
    }

    /// Sends `head` alone on a new connection and reads until the server closes; reads time out
    /// after 10 s, so a server waiting for the body fails the test.
    static func exchange(port: Int, _ head: String) async throws -> String {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<String, any Error>) in
            let thread = Thread { continuation.resume(with: Result { try exchangeBlocking(port: port, head) }) }
            thread.start()
        }
    }

    private static func exchangeBlocking(port: Int, _ head: String) throws -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SocketFailure(operation: "socket", code: errno) }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw SocketFailure(operation: "connect", code: errno) }
        let bytes = Array(head.utf8)
        guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            throw SocketFailure(operation: "send", code: errno)
        }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            if count < 0 {
                if errno == ECONNRESET, !received.isEmpty { break }
                throw SocketFailure(operation: "recv (the server neither answered nor closed)", code: errno)
            }
            received.append(contentsOf: chunk[..<count])
        }
        return String(decoding: received, as: UTF8.self)
    }
}
