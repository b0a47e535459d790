import APNs
import APNsSimulator
import AsyncTestSupport
import Foundation
import HTTPTestSupport
import HeraldCore
import Testing

@testable import HTTPRouting
@testable import HTTPServer
@testable import Relay

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
            try await eventually("no push in flight") { metrics.value("herald_relay_in_flight") == 0 }
        }
    }

    private func push(_ token: String, _ id: String) -> HTTPRequest {
        HTTPRequest(
            method: "POST",
            path: "/push/\(token)/\(id)",
            headers: HTTPHeaders([("Content-Encoding", "aes128gcm")]),
            body: [1, 2, 3]
        )
    }

    /// The simulator records a push before the relay has its answer: waits for the answer, or the
    /// warm-up push would be the one filling the queue.
    private func waitForTheWarmUpAnswer(_ metrics: MetricsRegistry) async throws {
        try await eventually("the warm-up answer") { metrics.value("herald_relay_in_flight") == 0 }
    }

    /// A relay whose budget is full after one push APNs answers after `apnsDelay` (room for one
    /// before waiting, or `maxInFlight` in all): `body` gets the relay, its metrics and the
    /// push's token.
    private func withFullQueue(
        maxInFlight: Int = 10_000,
        apnsDelay: Duration,
        _ body: (RelayHarness, MetricsRegistry, String) async throws -> Void
    ) async throws {
        let metrics = MetricsRegistry()
        try await RelayHarness.with(
            metrics: metrics,
            maxQueuedBeforeWaiting: maxInFlight == 10_000 ? 1 : 1_024,
            maxInFlight: maxInFlight
        ) { relay in
            let token = randomToken()
            #expect(try await relay.post("/push/\(token)/warm").status == 202)
            _ = try await relay.deliveries(token: token)
            try await waitForTheWarmUpAnswer(metrics)
            _ = relay.simulator.addFault(APNSSimulatorFault(.delay(apnsDelay), token: token))
            #expect(AnswerProbe { relay.service.relay(push(token, "fills"), answer: $0) }.atOnce?.status == 202)
            try await body(relay, metrics, token)
        }
    }

    @Test func aFullQueueNeverHoldsTheHTTPThreadTheRequestWaitsAsynchronouslyAndIsAccepted() async throws {
        try await withFullQueue(apnsDelay: .milliseconds(300)) { relay, metrics, token in
            // Not answered at once: the connection is suspended until room comes.
            #expect(metrics.value("herald_relay_in_flight") == 1)
            #expect(try await relay.post("/push/\(token)/waits").status == 202)
            #expect(relay.server.statistics.suspensions >= 1)
            let delivered = try await relay.deliveries(token: token, count: 3)
            #expect(delivered.filter { $0.status == 200 }.count == 3)
        }
    }

    @Test func aRequestWithoutRoomWaitsAsACallbackInTheBudgetAndIsAnsweredWhenAPNsAnswers() async throws {
        try await withFullQueue(apnsDelay: .milliseconds(300)) { relay, metrics, token in
            let service = relay.service
            let budget = try #require(service.clients[.production]).budget
            let probe = AnswerProbe { service.relay(push(token, "later"), answer: $0) }
            #expect(probe.atOnce == nil)
            #expect(probe.tasksStarted == 0)
            #expect(budget.suspendedCalls == 1, "waiting as a callback: no task, no thread held")
            #expect(try await probe.answer()?.get().status == 202)
            let delivered = try await relay.deliveries(token: token, count: 3)
            #expect(delivered.filter { $0.status == 200 }.count == 3)
        }
    }

    @Test func shutdownAnswersACallbackWaitingForRoomWith503() async throws {
        try await withFullQueue(apnsDelay: .seconds(5)) { relay, metrics, token in
            let service = relay.service
            let budget = try #require(service.clients[.production]).budget
            let probe = AnswerProbe { service.relay(push(token, "later"), answer: $0) }
            #expect(probe.atOnce == nil)
            #expect(probe.tasksStarted == 0)
            #expect(budget.suspendedCalls == 1)
            service.triggerGracefulShutdown()
            let response = try #require(try await probe.answer()?.get())
            #expect(response.status == 503)
            #expect(response.headers["Retry-After"] == "10")
            #expect(metrics.value("herald_relay_in_flight") == 1)
        }
    }

    @Test func shutdownReleasesARequestWaitingForRoomWith503() async throws {
        try await withFullQueue(apnsDelay: .seconds(5)) { relay, metrics, token in
            let service = relay.service
            // A task of its own: the request must stay suspended in the budget while this test
            // triggers the shutdown that answers it.
            let waiting = Task { try await relay.post("/push/\(token)/waits") }
            let budget = try #require(service.clients[.production]).budget
            // A task reaching its suspension announces nothing: poll the budget for it.
            try await eventually("the request waiting in the budget") { budget.suspendedCalls == 1 }
            relay.service.triggerGracefulShutdown()
            let response = try await waiting.value
            #expect(response.status == 503)
            #expect(response.headers["retry-after"] == "10")
            // Woken by the shutdown, not by room: the first push still waits for APNs.
            #expect(metrics.value("herald_relay_in_flight") == 1)
        }
    }

    @Test func atTheBudgetsLimitTheRelayAnswers503AtOnce() async throws {
        try await withFullQueue(maxInFlight: 1, apnsDelay: .seconds(5)) { relay, metrics, token in
            let refused = try #require(
                AnswerProbe { relay.service.relay(push(token, "refused"), answer: $0) }.atOnce
            )
            #expect(refused.status == 503)
            #expect(refused.headers["Retry-After"] == "10")
            #expect(String(decoding: refused.body, as: UTF8.self).contains("apns_unavailable"))
            #expect(
                metrics.value("herald_relay_requests_total", labels: [("encoding", "aes128gcm"), ("status", "503")])
                    == 1
            )
        }
    }
}
