import Synchronization

/// One connection attempt that several sends wait for (connects are single-flight): the send
/// that starts it runs the connect in its own task and calls ``complete(_:)``; the others
/// ``wait()``.
final class ConnectAttempt: Sendable {
    enum Outcome: Sendable {
        /// A connection was added to the pool.
        case connected
        /// Connecting failed; the pool is backing off.
        case failed(APNSConnectionPoolError)
        /// The task running the connect was cancelled; nothing is known about the endpoint.
        case cancelled
    }

    private struct State {
        var outcome: Outcome?
        var waiters: [Int: CheckedContinuation<Outcome, any Error>] = [:]
        var cancelled: Set<Int> = []
        var nextWaiter = 0
    }

    private let state = Mutex(State())

    /// Records the outcome and resumes every waiter.
    func complete(_ outcome: Outcome) {
        let waiters = state.withLock { state -> [CheckedContinuation<Outcome, any Error>] in
            state.outcome = outcome
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters {
            waiter.resume(returning: outcome)
        }
    }

    /// The outcome, once the connect is done.
    /// - Throws: `CancellationError` when the waiting task is cancelled first.
    func wait() async throws -> Outcome {
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Outcome, any Error>) in
                let result = state.withLock { state -> Result<Outcome, CancellationError>? in
                    if let outcome = state.outcome { return .success(outcome) }
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    state.waiters[id] = continuation
                    return nil
                }
                if let result { continuation.resume(with: result) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Outcome, any Error>? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                if state.outcome == nil { state.cancelled.insert(id) }
                return nil
            }
            waiter?.resume(throwing: CancellationError())
        }
    }
}
