import APNs
import APNsSimulator
import HeraldCore
import Testing

/// When senders outpace APNs, relay requests wait for room instead of queueing without bound.
@Suite("Relay backpressure")
struct RelayBackpressureTests {
    @Test func requestsBeyondTheQueueLimitWaitAndAreAllDelivered() async throws {
        let metrics = MetricsRegistry()
        try await RelayHarness.with(metrics: metrics, maxQueuedBeforeWaiting: 1) { relay in
            let token = randomToken()
            #expect(try await relay.post("/push/\(token)/warm").status == 202)
            _ = try await relay.deliveries(token: token)
            _ = relay.simulator.addFault(APNSSimulatorFault(.delay(.milliseconds(100)), token: token))

            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<4 {
                    group.addTask { try await relay.post("/push/\(token)/queued-\(index)").status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == [202, 202, 202, 202])
            let delivered = try await relay.deliveries(token: token, count: 5)
            #expect(delivered.filter { $0.status == 200 }.count == 5)
            for _ in 0..<200 where metrics.value("herald_relay_in_flight") != 0 {
                try await Task.sleep(for: .milliseconds(25))
            }
            #expect(metrics.value("herald_relay_in_flight") == 0)
        }
    }
}
