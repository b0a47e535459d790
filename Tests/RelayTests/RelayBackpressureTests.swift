import APNs
import APNsSimulator
import AsyncTestSupport
import Foundation
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

    /// `relayImmediately` as an HTTP thread calls it: blocking, on a thread of its own.
    private func relayOnThread(_ service: RelayService, _ request: HTTPRequest) async -> HTTPResponse? {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: service.relayImmediately(request)) }.start()
        }
    }

    /// The simulator records a push before the relay has its answer: waits for the answer, or the
    /// warm-up push would be the one filling the queue.
    private func waitForTheWarmUpAnswer(_ metrics: MetricsRegistry) async throws {
        try await eventually("the warm-up answer") { metrics.value("herald_relay_in_flight") == 0 }
    }

    /// A relay with a queue of one, filled with a push APNs answers after `apnsDelay`: `body`
    /// gets the relay, its metrics and the push's token.
    private func withFullQueue(
        maximumPause: Duration,
        apnsDelay: Duration,
        _ body: (RelayHarness, MetricsRegistry, String) async throws -> Void
    ) async throws {
        let metrics = MetricsRegistry()
        try await RelayHarness.with(metrics: metrics, maxQueuedBeforeWaiting: 1, maximumPause: maximumPause) {
            relay in
            let token = randomToken()
            #expect(try await relay.post("/push/\(token)/warm").status == 202)
            _ = try await relay.deliveries(token: token)
            try await waitForTheWarmUpAnswer(metrics)
            _ = relay.simulator.addFault(APNSSimulatorFault(.delay(apnsDelay), token: token))
            #expect(await relayOnThread(relay.service, push(token, "fills"))?.status == 202)
            try await body(relay, metrics, token)
        }
    }

    @Test func aFullQueuePausesTheHTTPThreadUntilAPNsAnswersAndTheRequestIsThenAccepted() async throws {
        try await withFullQueue(maximumPause: .seconds(20), apnsDelay: .milliseconds(300)) { relay, metrics, token in
            let paused = await relayOnThread(relay.service, push(token, "paused"))
            #expect(paused?.status == 202, "accepted on the HTTP thread, not handed to a task")
            #expect(metrics.value("herald_relay_pauses_total", labels: [("outcome", "room")]) == 1)
            #expect(metrics.value("herald_relay_pauses_total", labels: [("outcome", "timeout")]) == nil)
            let delivered = try await relay.deliveries(token: token, count: 3)
            #expect(delivered.filter { $0.status == 200 }.count == 3)
        }
    }

    @Test func aPauseInWhichAPNsAnswersNothingEndsAndTheRequestWaitsInATask() async throws {
        try await withFullQueue(maximumPause: .milliseconds(200), apnsDelay: .seconds(3)) { relay, metrics, token in
            // APNs is slower than the pause: nothing decided, nothing sent.
            #expect(await relayOnThread(relay.service, push(token, "gives-up")) == nil)
            #expect(metrics.value("herald_relay_pauses_total", labels: [("outcome", "timeout")]) == 1)
            // Through the server, the same request takes the asynchronous path and is accepted
            // once there is room.
            #expect(try await relay.post("/push/\(token)/in-a-task").status == 202)
            #expect(relay.server.statistics.suspensions >= 1)
            let delivered = try await relay.deliveries(token: token, count: 3)
            #expect(delivered.filter { $0.status == 200 }.count == 3)
        }
    }

    @Test func shutdownReleasesAPausedThreadWith503() async throws {
        try await withFullQueue(maximumPause: .seconds(30), apnsDelay: .seconds(5)) { relay, metrics, token in
            async let paused = relayOnThread(relay.service, push(token, "paused"))
            try await Task.sleep(for: .milliseconds(200))
            relay.service.triggerGracefulShutdown()
            let response = await paused
            #expect(response?.status == 503)
            #expect(response?.headers["Retry-After"] == "10")
            // Woken by the shutdown, not by room: the first push still waits for APNs.
            #expect(metrics.value("herald_relay_in_flight") == 1)
        }
    }

    @Test func whenAPNsAnswersFewerThanABatchInAPauseTheRequestTakesTheRoomThereIs() async throws {
        let metrics = MetricsRegistry()
        // A queue of 128 reopens below 126: one answer during the pause is not a batch.
        try await RelayHarness.with(metrics: metrics, maxQueuedBeforeWaiting: 128, maximumPause: .seconds(5)) {
            relay in
            let (fast, slow) = (randomToken(), randomToken())
            #expect(try await relay.post("/push/\(fast)/warm").status == 202)
            _ = try await relay.deliveries(token: fast)
            try await waitForTheWarmUpAnswer(metrics)
            _ = relay.simulator.addFault(APNSSimulatorFault(.delay(.seconds(1)), token: fast))
            _ = relay.simulator.addFault(APNSSimulatorFault(.delay(.seconds(10)), token: slow))

            // 127 pushes APNs answers after 10 s, then one it answers after 1 s (the queue is full),
            // then one more, all from one thread as an HTTP thread would take them. The last one
            // pauses, sees one answer (not a batch) and, at the end of its 5 s, takes the room that
            // answer made instead of going to a task.
            let requests =
                (0..<127).map { push(slow, "fill-\($0)") } + [push(fast, "answered-soon"), push(slow, "late")]
            let service = relay.service
            let statuses = await withCheckedContinuation { continuation in
                Thread { continuation.resume(returning: requests.map { service.relayImmediately($0)?.status }) }
                    .start()
            }
            #expect(statuses == Array(repeating: 202, count: 129))
            #expect(metrics.value("herald_relay_pauses_total", labels: [("outcome", "room")]) == 1)
            #expect(metrics.value("herald_relay_pauses_total", labels: [("outcome", "timeout")]) == nil)
        }
    }
}
