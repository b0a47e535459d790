import HeraldCore
import Synchronization

/// How many pushes may wait for APNs' answer at once: the admission control every sender shares.
///
/// A push counts from when a client takes it until its answer (after retries) reached the
/// sender. Senders ask in one of two ways: ``waitForRoom()`` suspends (never blocking a thread)
/// until fewer than ``Configuration/waitAbove`` pushes wait, and
/// ``APNSClient/submit(_:completion:)`` answers at once, refusing with
/// ``APNSSendRefusal/Code/full`` at ``Configuration/limit``. Awaited sends
/// (``APNSClient/send(_:)-(APNSRequest)``) wait for room first. ``close()`` ends the waits and
/// makes `submit` refuse; ``waitUntilEmpty()`` is the drain at shutdown.
///
/// ```swift
/// let budget = APNSSendBudget()
/// let client = APNSClient(transport: pool, credentials: credentials, budget: budget)
/// ```
public final class APNSSendBudget: Sendable {
    /// Limits of a budget.
    public struct Configuration: Sendable, Hashable {
        /// Pushes waiting for APNs at which ``APNSClient/submit(_:completion:)`` refuses with
        /// ``APNSSendRefusal/Code/full``. Default 10,000.
        public var limit = 10_000
        /// Pushes waiting for APNs at which ``APNSSendBudget/waitForRoom()`` waits. Each waiting
        /// push holds about 2.5 KB (its stream, header block, payload and request), so the
        /// default, 4,096, bounds that memory to about 10 MB when senders outpace APNs, by
        /// slowing them down rather than refusing them.
        public var waitAbove = 4_096

        public init() {}
    }

    public let configuration: Configuration
    /// Pushes taken and not yet answered.
    private let count = Atomic(0)
    /// Suspended ``waitForRoom()`` and ``waitUntilEmpty()`` calls: releases take the lock only
    /// when there are some.
    private let sleepers = Atomic(0)
    private let closed = Atomic(false)
    private let state = Mutex(Waiters())

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Pushes waiting for APNs' answer now.
    public var waiting: Int { count.load(ordering: .relaxed) }

    /// Whether fewer than ``Configuration/waitAbove`` pushes wait: a push taken now need not wait.
    public var hasRoom: Bool { count.load(ordering: .relaxed) < configuration.waitAbove }

    /// Calls suspended in ``waitForRoom()`` or ``waitUntilEmpty()`` now (for tests).
    package var suspendedCalls: Int { sleepers.load(ordering: .relaxed) }

    /// True once ``close()`` was called.
    public var isClosed: Bool { closed.load(ordering: .relaxed) }

    /// Returns once fewer than ``Configuration/waitAbove`` pushes wait, or the budget is closed.
    /// Waiters go first come, first served: each answered push lets one through.
    ///
    /// - Throws: `CancellationError` when the task is cancelled first.
    public func waitForRoom() async throws {
        if hasRoom || isClosed { return }
        try await suspend(.room)
    }

    /// Returns once no push waits for APNs; at once when the task is cancelled.
    public func waitUntilEmpty() async {
        if count.load(ordering: .sequentiallyConsistent) == 0 { return }
        try? await suspend(.empty)
    }

    /// Ends every wait for room and makes ``APNSClient/submit(_:completion:)`` refuse with
    /// ``APNSSendRefusal/Code/unavailable``; pushes already taken still finish.
    public func close() {
        closed.store(true, ordering: .sequentiallyConsistent)
        let waiters = state.withLock { $0.takeAll(.room) }
        if !waiters.isEmpty { sleepers.wrappingSubtract(waiters.count, ordering: .sequentiallyConsistent) }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: Counting (the client)

    /// Counts a push in unless ``Configuration/limit`` pushes wait already or the budget is
    /// closed; returns why not.
    func admit() -> APNSSendRefusal.Code? {
        let full = count.wrappingAdd(1, ordering: .sequentiallyConsistent).newValue > configuration.limit
        // Read after counting (both sequentially consistent): a drain that starts after `close()`
        // sees this push, or this push sees the budget closed.
        let isClosed = closed.load(ordering: .sequentiallyConsistent)
        guard full || isClosed else { return nil }
        release()
        return isClosed ? .unavailable : .full
    }

    /// Counts in a push that waited for room (above the limit only by a race of waiters).
    func admitAfterWaiting() {
        count.wrappingAdd(1, ordering: .sequentiallyConsistent)
    }

    /// Counts a push out: lets the first waiter through, and resumes the drain once none is left.
    func release() {
        let left = count.wrappingSubtract(1, ordering: .sequentiallyConsistent).newValue
        // Sequentially consistent on both sides: a waiter counts itself in before it reads
        // `count`, so either it sees this release or this release sees it.
        guard sleepers.load(ordering: .sequentiallyConsistent) > 0 else { return }
        let woken = state.withLock { waiters in
            var woken = waiters.takeFirst(.room).map { [$0] } ?? []
            if left == 0 { woken += waiters.takeAll(.empty) }
            return woken
        }
        if !woken.isEmpty { sleepers.wrappingSubtract(woken.count, ordering: .sequentiallyConsistent) }
        for waiter in woken { waiter.resume() }
    }

    // MARK: Waiting

    private func suspend(_ kind: Waiters.Kind) async throws {
        let id = state.withLock { $0.makeID() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { waiters -> Result<Void, CancellationError>? in
                    if waiters.cancelledEarly.remove(id) != nil { return .failure(CancellationError()) }
                    sleepers.wrappingAdd(1, ordering: .sequentiallyConsistent)
                    let current = count.load(ordering: .sequentiallyConsistent)
                    let done =
                        switch kind {
                        case .room: current < configuration.waitAbove || closed.load(ordering: .sequentiallyConsistent)
                        case .empty: current == 0
                        }
                    if done {
                        sleepers.wrappingSubtract(1, ordering: .sequentiallyConsistent)
                        return .success(())
                    }
                    waiters.append(id, kind, continuation)
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.cancel(id) }
            if let waiter {
                sleepers.wrappingSubtract(1, ordering: .sequentiallyConsistent)
                waiter.resume(throwing: CancellationError())
            }
        }
    }
}

/// The suspended calls of an ``APNSSendBudget``, in arrival order. Ids let a cancelled call take
/// its continuation back; a cancellation that arrives before its call suspends is remembered.
private struct Waiters {
    enum Kind { case room, empty }

    private var lastID = 0
    private var waiting = FIFOQueue<(id: Int, kind: Kind, continuation: CheckedContinuation<Void, any Error>)>()
    var cancelledEarly: Set<Int> = []

    mutating func makeID() -> Int {
        lastID += 1
        return lastID
    }

    mutating func append(_ id: Int, _ kind: Kind, _ continuation: CheckedContinuation<Void, any Error>) {
        waiting.append((id, kind, continuation))
    }

    mutating func cancel(_ id: Int) -> CheckedContinuation<Void, any Error>? {
        guard let waiter = waiting.remove(where: { $0.id == id }) else {
            cancelledEarly.insert(id)
            return nil
        }
        return waiter.continuation
    }

    mutating func takeFirst(_ kind: Kind) -> CheckedContinuation<Void, any Error>? {
        waiting.remove(where: { $0.kind == kind })?.continuation
    }

    mutating func takeAll(_ kind: Kind) -> [CheckedContinuation<Void, any Error>] {
        var taken: [CheckedContinuation<Void, any Error>] = []
        while let waiter = takeFirst(kind) { taken.append(waiter) }
        return taken
    }
}
