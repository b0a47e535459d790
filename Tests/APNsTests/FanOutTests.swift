import APNs
import AsyncTestSupport
import Foundation
import HeraldCore
import Synchronization
import Testing

@Suite struct PushOutcomeTests {
    static let now = Date(timeIntervalSince1970: 1_790_000_000)
    static let since = Date(timeIntervalSince1970: 1_700_000_000)

    struct NoConnection: Error {}

    static func rejected(
        _ status: Int,
        _ reason: APNSErrorReason,
        timestamp: Date? = nil
    ) -> Result<
        APNSSendResult, any Error
    > {
        .success(
            .rejected(
                APNSRejection(
                    response: APNSErrorResponse(status: status, reason: reason, timestamp: timestamp),
                    attempts: 2
                )
            )
        )
    }

    /// Every kind of answer, with the one outcome notifications, Live Activities and wake pings
    /// all read from it.
    @Test("one classification of every answer: sent, dead, retry, rejected, cancelled")
    func classification() {
        let cases: [(Result<APNSSendResult, any Error>, String)] = [
            (.success(.delivered(APNSDelivery(apnsID: UUID()))), "sent"),
            (Self.rejected(410, .unregistered, timestamp: Self.since), "dead since the timestamp"),
            (Self.rejected(400, .badDeviceToken), "dead since now"),
            (Self.rejected(400, .deviceTokenNotForTopic), "dead since now"),
            (Self.rejected(429, .tooManyRequests), "retry TooManyRequests after 2"),
            (Self.rejected(503, .serviceUnavailable), "retry ServiceUnavailable after 2"),
            (Self.rejected(403, .expiredProviderToken), "retry ExpiredProviderToken after 2"),
            (Self.rejected(400, .badTopic), "rejected BadTopic after 2"),
            (Self.rejected(413, .payloadTooLarge), "rejected PayloadTooLarge after 2"),
            (
                .failure(APNSValidationError(code: .payloadEmpty, field: "payload", message: "the payload is empty")),
                "rejected the payload is empty after 0"
            ),
            (.failure(CancellationError()), "cancelled"),
            (.failure(NoConnection()), "retry"),
        ]
        for (result, expected) in cases {
            let outcome: String
            switch APNSPushOutcome(result, now: Self.now) {
            case .sent: outcome = "sent"
            case .dead(_, let at):
                outcome =
                    at == Self.since ? "dead since the timestamp" : at == Self.now ? "dead since now" : "dead \(at)"
            case .retry(let failure) where failure.rejection != nil:
                outcome = "retry \(failure.reason) after \(failure.attempts)"
            case .retry: outcome = "retry"
            case .rejected(let failure): outcome = "rejected \(failure.reason) after \(failure.attempts)"
            case .cancelled: outcome = "cancelled"
            }
            #expect(outcome == expected, "\(result)")
        }
    }
}

@Suite struct FanOutTests {
    /// Counts the sends waiting at once. The first `fill` sends wait for each other (suspended, not
    /// spinning), so the cap is reached whatever the machine's load; later ones answer at once.
    final class Gate: Sendable {
        private struct State {
            var waiting = 0
            var most = 0
            var sent: [Int] = []
            var open = false
            var parked: [CheckedContinuation<Void, Never>] = []
        }

        private let state = Mutex(State())
        private let fill: Int

        init(fill: Int) {
            self.fill = fill
        }

        func send(_ push: Int) async throws -> APNSSendResult {
            let released = state.withLock { state -> [CheckedContinuation<Void, Never>]? in
                state.waiting += 1
                state.most = max(state.most, state.waiting)
                state.sent.append(push)
                guard !state.open else { return [] }
                guard state.waiting >= fill else { return nil }
                state.open = true
                defer { state.parked = [] }
                return state.parked
            }
            if let released {
                for continuation in released { continuation.resume() }
            } else {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let now = state.withLock { state in
                        if state.open { return true }
                        state.parked.append(continuation)
                        return false
                    }
                    if now { continuation.resume() }
                }
            }
            state.withLock { $0.waiting -= 1 }
            if push % 7 == 3 {
                return .rejected(APNSRejection(response: APNSErrorResponse(status: 410, reason: .unregistered)))
            }
            return .delivered(APNSDelivery())
        }

        var most: Int { state.withLock { $0.most } }
        var sent: [Int] { state.withLock { $0.sent } }
    }

    @Test("at most maximumInFlight wait for APNs, and every push is answered once", arguments: [1, 4, 64])
    func cap(maximumInFlight: Int) async throws {
        let gate = Gate(fill: maximumInFlight)
        let fanOut = APNSFanOut(maximumInFlight: maximumInFlight, clock: ManualClock(PushOutcomeTests.now))
        var next = 0
        var answered: [Int: String] = [:]
        try await fanOut.run(
            next: { () -> Int? in
                guard next < 200 else { return nil }
                defer { next += 1 }
                return next
            },
            send: { try await gate.send($0) }
        ) { push, answer in
            #expect(answered[push] == nil, "answered once")
            if case .dead = answer.outcome { answered[push] = "dead" } else { answered[push] = "sent" }
        }
        #expect(gate.most <= maximumInFlight)
        #expect(gate.most == maximumInFlight, "the cap is reached, not only respected")
        #expect(gate.sent.sorted() == Array(0..<200))
        #expect(answered.count == 200)
        #expect(answered.filter { $0.value == "dead" }.keys.sorted() == (0..<200).filter { $0 % 7 == 3 })
    }

    struct PageUnreadable: Error {}

    @Test("a source that fails stops the sending, and what was in flight is still answered")
    func sourceFails() async throws {
        let gate = Gate(fill: 8)
        let fanOut = APNSFanOut(maximumInFlight: 8, clock: ManualClock(PushOutcomeTests.now))
        var next = 0
        var answered = 0
        await #expect(throws: PageUnreadable.self) {
            try await fanOut.run(
                next: { () throws -> Int? in
                    guard next < 20 else { throw PageUnreadable() }
                    defer { next += 1 }
                    return next
                },
                send: { try await gate.send($0) }
            ) { _, _ in answered += 1 }
        }
        #expect(answered == 20, "every push sent before the failure is answered")
        #expect(gate.sent.count == 20)
    }

    @Test("a list is sent whole and answered in its order")
    func list() async throws {
        let gate = Gate(fill: 3)
        let fanOut = APNSFanOut(maximumInFlight: 3, clock: ManualClock(PushOutcomeTests.now))
        let answers = try await fanOut.send(Array(0..<10)) { try await gate.send($0) }
        #expect(answers.count == 10)
        for (push, answer) in answers.enumerated() {
            switch answer.outcome {
            case .dead: #expect(push % 7 == 3)
            case .sent: #expect(push % 7 != 3)
            default: Issue.record("push \(push): \(answer.outcome)")
            }
        }
        let one = try await fanOut.send([3]) { try await gate.send($0) }
        guard case .dead(_, let since) = one.first?.outcome else {
            Issue.record("one push: \(one)")
            return
        }
        #expect(since == PushOutcomeTests.now, "a 410 without a timestamp is dead since the clock's now")
    }

    @Test("once cancelled, nothing new is sent")
    func cancelled() async throws {
        let gate = Gate(fill: 2)
        let fanOut = APNSFanOut(maximumInFlight: 2, clock: ManualClock(PushOutcomeTests.now))
        let task = Task {
            var next = 0
            try await fanOut.run(
                next: { () -> Int? in
                    defer { next += 1 }
                    if next == 10 { withUnsafeCurrentTask { $0?.cancel() } }
                    return next
                },
                send: { try await gate.send($0) }
            ) { _, _ in }
        }
        try await task.value
        #expect(gate.sent.count <= 11, "no push asked for after the cancel is sent")
    }
    @Test("a push keeps its slot until settled, and the pushes answered together settle at once")
    func settle() async throws {
        let maximumInFlight = 4
        let sent = Mutex(0)
        let settling = Mutex(0)
        let sentWhileFull = Mutex<Int?>(nil)
        let full = Latch()
        let fanOut = APNSFanOut(maximumInFlight: maximumInFlight, clock: ManualClock(PushOutcomeTests.now))
        // Settled one by one, the first push would wait for ever: the deadline fails the test.
        let settled = try await withDeadline("the first pushes to settle together") {
            var next = 0
            var settled: [Int] = []
            try await fanOut.run(
                next: { () -> Int? in
                    guard next < 12 else { return nil }
                    defer { next += 1 }
                    return next
                },
                send: { _ in
                    sent.withLock { $0 += 1 }
                    return .delivered(APNSDelivery())
                },
                settle: { push, answer -> Int in
                    // The first pushes wait until every slot's push is settling at once.
                    let isLast = settling.withLock { settling in
                        settling += 1
                        return settling == maximumInFlight
                    }
                    if isLast {
                        sentWhileFull.withLock { $0 = sent.withLock { $0 } }
                        full.open()
                    }
                    try await full.wait()
                    guard case .sent = answer.outcome else { return -1 }
                    return push
                }
            ) { _, push in settled.append(push) }
            return settled
        }
        #expect(sentWhileFull.withLock { $0 } == maximumInFlight, "no push is sent while every slot's settles")
        #expect(settled.sorted() == Array(0..<12), "every push settled once, and its result answered")
    }
}
