import APNsSimulator
import Foundation
import Glibc
import Relay
import SocketTestSupport
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
            let answer = try await Loopback.exchange(port: relay.port, head)
            #expect(answer.hasPrefix("HTTP/1.1 413"), "answer: \(answer)")
            #expect(answer.contains("\"error\""))
            #expect(answer.lowercased().contains("connection: close"))
            #expect(relay.simulator.deliveries().isEmpty)
        }
    }
}
