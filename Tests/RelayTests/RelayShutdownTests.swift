import APNs
import APNsSimulator
import AsyncTestSupport
import Foundation
import HeraldCore
import Relay
import Testing

/// SIGINT/SIGTERM: the relay stops taking pushes and finishes those already accepted (RELAY.md).
@Suite("Relay graceful shutdown", .serialized)
struct RelayShutdownTests {
    @Test func acceptedPushesFinishAfterShutdownBeginsAndNewOnesAre503() async throws {
        let metrics = MetricsRegistry()
        try await RelayHarness.with(metrics: metrics) { relay in
            let token = randomToken()
            // Open the connection first, then make APNs slow to answer.
            #expect(try await relay.post("/push/\(token)/warm").status == 202)
            _ = try await relay.deliveries(token: token)
            _ = relay.simulator.addFault(APNSSimulatorFault(.delay(.milliseconds(400)), token: token))

            #expect(try await relay.post("/push/\(token)/in-flight").status == 202)
            relay.service.triggerGracefulShutdown()
            let refused = try await relay.post("/push/\(token)/late")
            #expect(refused.status == 503)
            #expect(refused.headers["retry-after"] != nil)

            // The push accepted before shutdown still reaches APNs and gets its answer.
            let delivered = try await relay.deliveries(token: token, count: 2)
            #expect(delivered.filter { $0.status == 200 }.count == 2)
            try await eventually("both answers to be counted") {
                metrics.value("herald_relay_apns_responses_total", labels: [("reason", "success")]) == 2
            }
            #expect(metrics.value("herald_relay_apns_responses_total", labels: [("reason", "success")]) == 2)
        }
    }

    @Test func cancelledRunReturnsWithoutWaitingForAPNs() async throws {
        let metrics = MetricsRegistry()
        try await RelayHarness.with(metrics: metrics, runsService: false) { relay in
            let running = Task { try await relay.service.run() }
            let token = randomToken()
            #expect(try await relay.post("/push/\(token)/warm").status == 202)
            _ = try await relay.deliveries(token: token)
            // The simulator records a push before the relay has its answer.
            try await eventually("the warm-up answer") {
                metrics.value("herald_relay_apns_responses_total", labels: [("reason", "success")]) == 1
            }
            _ = relay.simulator.addFault(APNSSimulatorFault(.delay(.seconds(2)), token: token))
            #expect(try await relay.post("/push/\(token)/slow").status == 202)

            // The grace period ran out: run() returns although APNs has not answered yet.
            relay.service.triggerGracefulShutdown()
            running.cancel()
            try await running.value
            #expect(metrics.value("herald_relay_in_flight") == 1)
            #expect(metrics.value("herald_relay_apns_responses_total", labels: [("reason", "success")]) == 1)
        }
    }
}
