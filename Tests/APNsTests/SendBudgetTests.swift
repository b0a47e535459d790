import AsyncTestSupport
import Foundation
import HeraldCrypto
import Synchronization
import Testing

@testable import APNs

/// The admission budget: wait for room (suspending, cancellable), fail fast (full, closed), the
/// drain at shutdown, and the client's `send(_:completion:)` in front of it. A task reaching its suspension
/// announces nothing, so the tests poll ``APNSSendBudget/suspendedCalls`` with `eventually`.
@Suite struct SendBudgetTests {
    /// What tasks record, in order.
    final class Record: Sendable {
        let items = Mutex<[Int]>([])
    }

    static func budget(limit: Int = 10, waitAbove: Int = 2) -> APNSSendBudget {
        var configuration = APNSSendBudget.Configuration()
        configuration.limit = limit
        configuration.waitAbove = waitAbove
        return APNSSendBudget(configuration: configuration)
    }

    @Test func withRoomNothingWaits() async throws {
        let budget = Self.budget()
        #expect(budget.admit() == nil)
        #expect(budget.hasRoom)
        try await budget.waitForRoom()
        #expect(budget.suspendedCalls == 0)
    }

    @Test func waitersGoThroughOnePerAnsweredPushFirstComeFirstServed() async throws {
        let budget = Self.budget(waitAbove: 2)
        #expect(budget.admit() == nil)
        #expect(budget.admit() == nil)
        #expect(!budget.hasRoom)
        let order = Record()
        try await withThrowingTaskGroup { group in
            group.addTask {
                try await budget.waitForRoom()
                order.items.withLock { $0.append(1) }
            }
            try await eventually("one waiting for room") { budget.suspendedCalls == 1 }
            group.addTask {
                try await budget.waitForRoom()
                order.items.withLock { $0.append(2) }
            }
            try await eventually("two waiting for room") { budget.suspendedCalls == 2 }
            budget.release()
            try await eventually("the first waiter to run") { order.items.withLock { $0 } == [1] }
            #expect(budget.suspendedCalls == 1)
            budget.release()
            try await group.waitForAll()
        }
        #expect(order.items.withLock { $0 } == [1, 2])
    }

    @Test func aCancelledWaitThrowsAndLeavesNothingBehind() async throws {
        let budget = Self.budget(waitAbove: 1)
        #expect(budget.admit() == nil)
        let waiting = Task { try await budget.waitForRoom() }
        try await eventually("one waiting for room") { budget.suspendedCalls == 1 }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(budget.suspendedCalls == 0)
        // A release with no one waiting changes only the count.
        budget.release()
        #expect(budget.waiting == 0)
    }

    @Test func aWaitCancelledBeforeItStartsDoesNotWait() async throws {
        let budget = Self.budget(waitAbove: 1)
        #expect(budget.admit() == nil)
        let waiting = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await budget.waitForRoom()
        }
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(budget.suspendedCalls == 0)
    }

    @Test func atTheLimitAdmissionFailsFastWithFull() {
        let budget = Self.budget(limit: 2, waitAbove: 1)
        #expect(budget.admit() == nil)
        #expect(budget.admit() == nil)
        #expect(budget.admit() == .full)
        #expect(budget.waiting == 2, "a refused push is not counted")
        budget.release()
        #expect(budget.admit() == nil)
    }

    @Test func closingEndsWaitsAndRefusesNewPushesAsUnavailable() async throws {
        let budget = Self.budget(waitAbove: 1)
        #expect(budget.admit() == nil)
        let waiting = Task { try await budget.waitForRoom() }
        try await eventually("one waiting for room") { budget.suspendedCalls == 1 }
        budget.close()
        try await waiting.value
        #expect(budget.admit() == .unavailable)
        #expect(budget.waiting == 1, "the push taken before closing still counts")
    }

    @Test func theDrainReturnsWithTheLastAnswerOrAtOnceWhenCancelled() async throws {
        let budget = Self.budget()
        #expect(budget.admit() == nil)
        #expect(budget.admit() == nil)
        let drained = Task { await budget.waitUntilEmpty() }
        try await eventually("one waiting for room") { budget.suspendedCalls == 1 }
        budget.release()
        #expect(budget.suspendedCalls == 1)
        budget.release()
        await drained.value
        #expect(budget.waiting == 0)

        #expect(budget.admit() == nil)
        let abandoned = Task { await budget.waitUntilEmpty() }
        try await eventually("one waiting for room") { budget.suspendedCalls == 1 }
        abandoned.cancel()
        await abandoned.value
        #expect(budget.waiting == 1)
    }

    @Test func aCallbackWaitsInLineWithTasksAndIsResumedByTheRelease() async throws {
        let budget = Self.budget(waitAbove: 1)
        #expect(budget.waitForRoom { _ in Issue.record("called although there was room") } == .room)
        #expect(budget.admit() == nil)
        let order = Record()
        try await withThrowingTaskGroup { group in
            group.addTask {
                try await budget.waitForRoom()
                order.items.withLock { $0.append(1) }
            }
            try await eventually("one waiting for room") { budget.suspendedCalls == 1 }
            let known = budget.waitForRoom { outcome in
                #expect(outcome == .room)
                order.items.withLock { $0.append(2) }
            }
            #expect(known == nil, "registered: no room now")
            #expect(budget.suspendedCalls == 2)
            budget.release()
            try await eventually("the first waiter to run") { order.items.withLock { $0 } == [1] }
            #expect(budget.admit() == nil)
            budget.release()
            #expect(order.items.withLock { $0 } == [1, 2], "resumed on the releasing thread, in arrival order")
            try await group.waitForAll()
        }
        #expect(budget.suspendedCalls == 0)
    }

    @Test func closingResumesWaitingCallbacksAsClosedAndLaterOnesAtOnce() {
        let budget = Self.budget(waitAbove: 1)
        #expect(budget.admit() == nil)
        let outcomes = Mutex<[APNSSendBudget.WaitOutcome]>([])
        #expect(budget.waitForRoom { outcome in outcomes.withLock { $0.append(outcome) } } == nil)
        budget.close()
        #expect(outcomes.withLock { $0 } == [.closed])
        #expect(budget.waitForRoom { _ in Issue.record("called although closed") } == .closed)
        #expect(budget.suspendedCalls == 0)
    }

    /// A woken callback whose send is refused releases again on the same thread: the chain of
    /// waiters is resumed in a loop, not by recursion, so it cannot overflow the stack.
    @Test func callbacksWhoseSendIsRefusedResumeTheNextWaiterWithoutRecursion() {
        let budget = Self.budget(waitAbove: 1)
        #expect(budget.admit() == nil)
        let resumed = Atomic(0)
        let waiters = 50_000
        for _ in 0..<waiters {
            let known = budget.waitForRoom { _ in
                resumed.wrappingAdd(1, ordering: .relaxed)
                // Takes the room, is refused by the transport, gives it back.
                if budget.admit() == nil { budget.release() }
            }
            #expect(known == nil)
        }
        budget.release()
        #expect(resumed.load(ordering: .relaxed) == waiters)
        #expect(budget.waiting == 0)
        #expect(budget.suspendedCalls == 0)
    }

    // MARK: The client in front of the budget

    /// A transport that takes every request and answers when the test says.
    final class HandOverTransport: APNSTransport {
        private let pending = Mutex<[@Sendable (Result<APNSTransportResponse, any Error>) -> Void]>([])
        let refuses: Bool

        init(refuses: Bool = false) {
            self.refuses = refuses
        }

        var waitingAnswers: Int { pending.withLock { $0.count } }

        func send(
            _ request: APNSTransportRequest,
            completion: @escaping @Sendable (Result<APNSTransportResponse, any Error>) -> Void
        ) {
            if refuses {
                completion(.failure(APNSSendRefusal(.unavailable, reason: "no connection")))
                return
            }
            pending.withLock { $0.append(completion) }
        }

        var isReady: Bool { !refuses }

        func prepare() async throws {}

        func answerAll(status: Int) {
            for completion in pending.withLock({ pending in
                defer { pending = [] }; return pending
            }) {
                completion(.success(APNSTransportResponse(APNSHTTPResponse(status: status))))
            }
        }
    }

    static func client(_ transport: HandOverTransport, budget: APNSSendBudget) -> APNSClient {
        APNSClient(transport: transport, credentials: .certificate(certificatePEM: "", keyPEM: ""), budget: budget)
    }

    @Test func sendWithCompletionIsTakenCountedUntilAnsweredThenFailsFastWhenFull() {
        let transport = HandOverTransport()
        let budget = Self.budget(limit: 2, waitAbove: 1)
        let client = Self.client(transport, budget: budget)
        let answers = Record()
        for _ in 0..<2 {
            #expect(client.send(.alert()) { _ in answers.items.withLock { $0.append(1) } } == nil)
        }
        #expect(budget.waiting == 2)
        let refusal = client.send(.alert()) { _ in Issue.record("a refused push was answered") }
        #expect(refusal?.code == .full)
        #expect(transport.waitingAnswers == 2, "a refused push never reaches the transport")
        transport.answerAll(status: 200)
        #expect(answers.items.withLock { $0.count } == 2)
        #expect(budget.waiting == 0)
    }

    @Test func aTransportFailureReachesTheCompletionThroughRunOnceAndIsCountedUntilThen() async throws {
        let budget = Self.budget()
        let client = Self.client(HandOverTransport(refuses: true), budget: budget)
        await withDiscardingTaskGroup { group in
            group.addTask { await client.run() }
            let result = await withCheckedContinuation { continuation in
                let refusal = client.send(.alert()) { continuation.resume(returning: $0) }
                #expect(refusal == nil, "the push is taken; the transport's failure goes to the completion")
            }
            #expect(throws: APNSSendRefusal.self) { try result.get() }
            await budget.waitUntilEmpty()
            #expect(budget.waiting == 0)
            group.cancelAll()
        }
    }
}
