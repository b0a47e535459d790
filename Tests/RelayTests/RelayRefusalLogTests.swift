import APNsSimulator
import AsyncTestSupport
import Foundation
import HeraldCore
import Synchronization
import Testing

/// Anyone who can reach the relay can make APNs refuse pushes: the warnings are limited to one
/// per reason per second, and every refusal still counts in `/metrics`.
@Suite struct RelayRefusalLogTests {
    /// The lines the relay logged.
    final class Recording: Sendable {
        private let lines = Mutex<[String]>([])

        var logged: [String] { lines.withLock { $0 } }

        func append(_ line: String) {
            lines.withLock { $0.append(line) }
        }
    }

    @Test("refusals: one warning per reason per second with the count held back, every one in the metrics")
    func refusalWarningsAreRateLimited() async throws {
        let metrics = MetricsRegistry()
        let recording = Recording()
        // At the real time of day: the relay stamps `apns-expiration` from it.
        let clock = ManualClock(Date())
        let logger = Logger(
            label: "test.relay",
            level: .warning,
            handler: StreamLogHandler(format: .text) { recording.append($0) }
        )
        try await RelayHarness.with(metrics: metrics, relayLogger: logger, clock: clock) { relay in
            let token = randomToken()
            relay.simulator.setToken(
                APNSSimulatorTokenState(token: token, unregisteredAt: Date(timeIntervalSince1970: 1_700_000_000))
            )
            func refusals() -> Double {
                metrics.value("herald_relay_apns_responses_total", labels: [("reason", "Unregistered")]) ?? 0
            }
            func waitForRefusals(_ count: Double) async throws {
                try await eventually("\(Int(count)) refusals to be counted", timeout: .seconds(60)) {
                    refusals() >= count
                }
                #expect(refusals() == count)
            }
            func refusalLines() -> [String] {
                recording.logged.filter { $0.contains("APNs refused a relayed push") }
            }

            for index in 0..<20 {
                #expect(try await relay.post("/push/\(token)/\(index)").status == 202)
            }
            try await waitForRefusals(20)
            #expect(refusalLines().count == 1)
            #expect(refusalLines().first?.contains("suppressed=0") == true)

            // Within the second: still held back, still counted.
            clock.advance(by: .milliseconds(999))
            #expect(try await relay.post("/push/\(token)/20").status == 202)
            try await waitForRefusals(21)
            #expect(refusalLines().count == 1)

            // The next second's first refusal says how many were held back.
            clock.advance(by: .milliseconds(1))
            #expect(try await relay.post("/push/\(token)/21").status == 202)
            try await waitForRefusals(22)
            let lines = refusalLines()
            #expect(lines.count == 2)
            #expect(lines.last?.contains("suppressed=20") == true)
            #expect(lines.last?.contains("reason=Unregistered") == true)
        }
    }
}
