import DatabaseTestSupport
import Foundation
import Glibc
import HeraldAPI
import HeraldCore
import SocketTestSupport
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
                let answer = try await Loopback.exchange(port: port, head)
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
}
