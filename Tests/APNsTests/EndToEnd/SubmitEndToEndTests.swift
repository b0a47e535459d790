import APNs
import APNsTransport
import Foundation
import HeraldCore
import Synchronization
import Testing

/// `APNSClient.send(_:completion:)`, the one way a push goes out (the relay's, without a task per
/// push), against the test APNs server over HTTP/2 and TLS: taken at once, then the same answers
/// and retries as the awaiting `send` (the retries in the client's `run()`).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct SubmitEndToEndTests {
    @Test("send with a completion: taken before a connection exists, which the pool opens; every push answered once")
    func delivers() async throws {
        try await withHarness { h in
            #expect(!h.client.isReady)
            #expect(h.pool.status.openConnections == 0)
            let requests = (0..<300).map { _ in APNSRequest.alert() }
            let results = try await Self.submitAll(requests, with: h.client, prepare: false)
            #expect(results.count == requests.count)
            for (request, result) in zip(requests, results) {
                guard case .success(.delivered(let delivery)) = result else {
                    Issue.record("expected delivery, got \(result)")
                    continue
                }
                #expect(delivery.apnsID == request.id)
                #expect(delivery.attempts == 1)
                #expect(h.requests(for: request.id).count == 1)
            }
            #expect(h.pool.status.openConnections == 1)
            #expect(h.client.isReady)
        }
    }

    @Test("send with a completion: 429 is retried with backoff, then delivered, as with send")
    func retries() async throws {
        try await withHarness(retryPolicy: .default) { h in
            // One delivered push first, so that the throttled one takes the direct path.
            _ = try await Self.submitAll([APNSRequest.alert()], with: h.client)
            h.server.fake.throttle(Fixtures.token, count: 2)
            let request = APNSRequest.alert()
            let results = try await stepping(h.clock, sleeps: 2) {
                try await Self.submitAll([request], with: h.client)
            }
            guard case .success(.delivered(let delivery)) = results.first else {
                Issue.record("expected delivery, got \(results)")
                return
            }
            #expect(delivery.attempts == 3)
            #expect(h.requests(for: request.id).count == 3)
            #expect(h.clock.sleepCount == 2)
        }
    }

    @Test("send with a completion: a permanent refusal is answered once, without a retry")
    func permanentRefusal() async throws {
        try await withHarness(retryPolicy: .default) { h in
            _ = try await Self.submitAll([APNSRequest.alert()], with: h.client)
            h.server.intercept { received in .respond(.apnsError(400, "BadDeviceToken", apnsID: received.apnsID)) }
            let request = APNSRequest.alert()
            let results = try await Self.submitAll([request], with: h.client)
            guard case .success(.rejected(let rejection)) = results.first else {
                Issue.record("expected a rejection, got \(results)")
                return
            }
            #expect(rejection.reason.rawValue == "BadDeviceToken")
            #expect(rejection.attempts == 1)
            #expect(h.requests(for: request.id).count == 1)
            #expect(h.clock.sleepCount == 0)
        }
    }

    @Test("send with a completion after the pool shut down: taken, answered once with the pool's error")
    func afterShutdown() async throws {
        try await withHarness { h in
            _ = try await Self.submitAll([APNSRequest.alert()], with: h.client)
            await h.pool.shutdown()
            #expect(!h.client.isReady)
            let results = try await Self.submitAll([APNSRequest.alert()], with: h.client, prepare: false)
            guard case .failure(let error as APNSConnectionPoolError) = results.first else {
                Issue.record("expected the pool's error, got \(results)")
                return
            }
            #expect(error.code == .shutDown)
            await h.client.budget.waitUntilEmpty()
            #expect(h.client.budget.waiting == 0)
        }
    }

    /// Sends every request from this thread (after `prepare()`, unless told not to), with the
    /// client's `run()` going, then waits for all the answers, in request order.
    static func submitAll(
        _ requests: [APNSRequest],
        with client: APNSClient,
        prepare: Bool = true
    ) async throws -> [Result<APNSSendResult, any Error>] {
        if prepare { try await client.prepare() }
        let answers = Mutex([Int: Result<APNSSendResult, any Error>]())
        let done = AsyncStream<Void>.makeStream()
        return try await withThrowingTaskGroup { group in
            group.addTask { await client.run() }
            for (index, request) in requests.enumerated() {
                let refusal = client.send(request) { result in
                    let complete = answers.withLock { answers in
                        #expect(answers[index] == nil, "a push was answered twice")
                        answers[index] = result
                        return answers.count == requests.count
                    }
                    if complete { done.continuation.finish() }
                }
                try #require(refusal == nil, "push \(index) refused: \(String(describing: refusal))")
            }
            for await _ in done.stream {}
            group.cancelAll()
            return answers.withLock { answers in requests.indices.compactMap { answers[$0] } }
        }
    }
}
