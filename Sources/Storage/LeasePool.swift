import Synchronization

/// A fixed set of resources (connections) lent to one task at a time, with FIFO waiters.
///
/// With one resource it is an async mutex (SQLite's single connection); with several, a
/// connection pool (PostgreSQL). A waiting task that is cancelled stops waiting and throws
/// `CancellationError`, unless it runs inside ``withDatabaseCancellationIgnored(_:)``. State lives in a `Mutex`; continuations are resumed after unlocking.
final class LeasePool<Resource: Sendable>: Sendable {
    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Resource, any Error>
    }

    private struct State {
        var idle: [Resource]
        var waiters: [Waiter] = []
        var nextWaiterID: UInt64 = 0
        var closedError: DatabaseError?
        var drainWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private enum AcquireAction {
        case resume(Resource)
        case fail(any Error)
        case wait
    }

    private let state: Mutex<State>

    /// Every resource, idle or lent; for shutting them down.
    let all: [Resource]

    init(_ resources: [Resource]) {
        self.all = resources
        self.state = Mutex(State(idle: resources.reversed()))
    }

    /// Waits for a resource, runs `body` with it, and gives it back however `body` ends.
    ///
    /// - Parameters:
    ///   - timeout: the longest wait for a resource when none is free; `nil` waits as long as it takes.
    ///   - timeoutError: what to throw when `timeout` passes first.
    func withLease<T>(
        timeout: Duration? = nil,
        timeoutError: @autoclosure () -> any Error = CancellationError(),
        _ body: (Resource) async throws -> T
    ) async throws -> T {
        let resource: Resource
        if let timeout {
            // The common case, a free resource, starts no timer.
            if let idle = try takeIdle() {
                resource = idle
            } else {
                resource = try await acquire(timeout: timeout, timeoutError: timeoutError())
            }
        } else {
            resource = try await acquire()
        }
        defer { release(resource) }
        return try await body(resource)
    }

    /// A free resource without waiting, `nil` when all are lent out (waiters then exist or will).
    private func takeIdle() throws -> Resource? {
        try state.withLock { state throws -> Resource? in
            if let error = state.closedError { throw error }
            if DatabaseCancellation.stopsCheckout { throw CancellationError() }
            return state.idle.popLast()
        }
    }

    private enum Race: Sendable {
        case acquired(Resource)
        case failed(any Error)
        case timedOut
        case stopped
    }

    /// ``acquire()`` raced against a timer: the timer's win removes the waiter (through
    /// cancellation). A resource handed over at the same moment is kept rather than leaked.
    private func acquire(timeout: Duration, timeoutError: any Error) async throws -> Resource {
        let outcome = await withTaskGroup(of: Race.self) { group -> Result<Resource, any Error> in
            group.addTask {
                do { return .acquired(try await self.acquire()) } catch { return .failed(error) }
            }
            group.addTask {
                do {
                    try await Task.sleep(for: timeout)
                    return .timedOut
                } catch {
                    return .stopped
                }
            }
            var acquired: Resource?
            var failure: (any Error)?
            var timedOut = false
            for await result in group {
                switch result {
                case .acquired(let resource): acquired = resource
                case .failed(let error): failure = failure ?? error
                case .timedOut: timedOut = true
                case .stopped: continue
                }
                group.cancelAll()
            }
            if let acquired { return .success(acquired) }
            if timedOut, !Task.isCancelled { return .failure(timeoutError) }
            return .failure(failure ?? CancellationError())
        }
        return try outcome.get()
    }

    func acquire() async throws -> Resource {
        let id = state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        let ignoresCancellation = DatabaseCancellation.ignored
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Resource, any Error>) in
                let action = state.withLock { state -> AcquireAction in
                    if let error = state.closedError { return .fail(error) }
                    // The cancellation flag is set before the handler runs, and both take the lock:
                    // either the handler sees this waiter, or this check sees the flag.
                    if DatabaseCancellation.stopsCheckout { return .fail(CancellationError()) }
                    if let resource = state.idle.popLast() { return .resume(resource) }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return .wait
                }
                switch action {
                case .resume(let resource): continuation.resume(returning: resource)
                case .fail(let error): continuation.resume(throwing: error)
                case .wait: break
                }
            }
        } onCancel: {
            guard !ignoresCancellation else { return }
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    func release(_ resource: Resource) {
        let total = all.count
        let (waiter, drained) = state.withLock { state -> (Waiter?, [CheckedContinuation<Void, Never>]) in
            if state.waiters.isEmpty {
                state.idle.append(resource)
                guard state.idle.count == total else { return (nil, []) }
                defer { state.drainWaiters = [] }
                return (nil, state.drainWaiters)
            }
            return (state.waiters.removeFirst(), [])
        }
        waiter?.continuation.resume(returning: resource)
        for continuation in drained { continuation.resume() }
    }

    /// Fails every waiter and every later ``acquire()`` with `error`. Leases already out stay valid
    /// until released.
    func close(with error: DatabaseError) {
        let waiters = state.withLock { state -> [Waiter] in
            state.closedError = error
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.continuation.resume(throwing: error) }
    }

    /// Waits until every resource is back (after ``close(with:)``), so they can be shut down.
    func waitUntilAllReturned() async {
        let total = all.count
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.idle.count == total { return true }
                state.drainWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}
