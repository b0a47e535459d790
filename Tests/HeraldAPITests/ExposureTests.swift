import DatabaseTestSupport
import Foundation
import Glibc
import HeraldAPI
import HeraldCore
import Testing

/// `/v1` refuses a request without the key on its headers, before reading its body, and the
/// server's deadline and per-address settings come from the environment.
@Suite("Bounded exposure")
struct ExposureTests {
    @Test("POST /v1/notifications without the key: 401 before the 4 MiB body is read, then closed")
    func unauthorizedBeforeTheBody() async throws {
        try await NotificationAPITests.with(.sqliteMemory) { harness in
            let port = try #require(Int(harness.base.split(separator: ":").last ?? ""))
            for authorization in ["", "Authorization: Bearer wrong-key-0123456789abcdef\r\n"] {
                let head =
                    "POST /v1/notifications HTTP/1.1\r\nHost: x\r\n\(authorization)"
                    + "Content-Type: application/json\r\nContent-Length: 4000000\r\n\r\n{\"tokens\":["
                let answer = try await Self.exchange(port: port, head)
                #expect(answer.hasPrefix("HTTP/1.1 401"), "answer: \(answer)")
                #expect(answer.contains("api_key"))
                #expect(answer.lowercased().contains("connection: close"))
            }
        }
    }

    @Test func requestTimeoutAndPerIPLimitAreRead() throws {
        let defaults = try ServerConfiguration.load(environment: [:])
        #expect(defaults.requestTimeout == .seconds(30))
        #expect(defaults.maxConnectionsPerIP == nil)
        let set = try ServerConfiguration.load(
            environment: ["HERALD_REQUEST_TIMEOUT": "5", "HERALD_MAX_CONNECTIONS_PER_IP": "64"]
        )
        #expect(set.requestTimeout == .seconds(5))
        #expect(set.maxConnectionsPerIP == 64)
        for (name, value) in [
            ("HERALD_REQUEST_TIMEOUT", "0"), ("HERALD_REQUEST_TIMEOUT", "1.5"), ("HERALD_REQUEST_TIMEOUT", "3601"),
            ("HERALD_MAX_CONNECTIONS_PER_IP", "0"), ("HERALD_MAX_CONNECTIONS_PER_IP", "all"),
        ] {
            do {
                _ = try ServerConfiguration.load(environment: [name: value])
                Issue.record("\(name)=\(value) was accepted")
            } catch {
                #expect(error.problems.count == 1)
                #expect(error.problems.first?.hasPrefix("\(name)=\(value) is not valid: use a whole number") == true)
            }
        }
    }

    /// Sends `head` on a new connection (and nothing more), then reads until the server closes.
    /// Reads time out after 10 s, so a server waiting for the body fails the test.
    static func exchange(port: Int, _ head: String) async throws -> String {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<String, any Error>) in
            let thread = Thread {
                continuation.resume(with: Result { try exchangeBlocking(port: port, head) })
            }
            thread.start()
        }
    }

    struct SocketFailure: Error, CustomStringConvertible {
        var operation: String
        var code: Int32
        var description: String { "\(operation) failed: \(String(cString: strerror(code)))" }
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
                // A reset after the answer is a close too.
                if errno == ECONNRESET, !received.isEmpty { break }
                throw SocketFailure(operation: "recv (the server neither answered nor closed)", code: errno)
            }
            received.append(contentsOf: chunk[..<count])
        }
        return String(decoding: received, as: UTF8.self)
    }
}
