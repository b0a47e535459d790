import HeraldCore
import Synchronization

/// How many pushes may wait for APNs' answer at once: the admission control every sender shares.
///
/// A push counts from when a client takes it until its answer (after retries) reached the
/// sender. Senders ask in one of three ways:
/// - ``waitForRoom()`` suspends (never blocking a thread, cancellable) until fewer than
///   ``Configuration/waitAbove`` pushes wait;
/// - ``waitForRoom(_:)`` registers a callback instead, for senders that are not Swift tasks
///   (the relay, on the HTTP server's threads);
/// - ``APNSClient/send(_:completion:)`` answers at once, refusing with
///   ``APNSSendRefusal/Code/full`` at ``Configuration/limit``.
///
/// Waiters of both kinds go first come, first served: each answered push lets one through.
/// Awaited sends (``APNSClient/send(_:)-(APNSRequest)``) wait for room first. ``close()`` ends
/// the waits and makes `send(_:completion:)` refuse; ``waitUntilEmpty()`` is the drain at shutdown.
///
/// ```swift
/// let budget = APNSSendBudget()
/// let client = APNSClient(transport: pool, credentials: credentials, budget: budget)
/// ```
public final class APNSSendBudget: Sendable {
    /// Limits of a budget.
    public struct Configuration: Sendable, Hashable {
        /// Pushes waiting for APNs at which ``APNSClient/send(_:completion:)`` refuses with
        /// ``APNSSendRefusal/Code/full``. Default 10,000.
        public var limit = 10_000
        /// Pushes waiting for APNs at which ``APNSSendBudget/waitForRoom()`` waits. Each waiting
        /// push holds about 2.5 KB (its stream, header block, payload and request), so the
        /// default, 4,096, bounds that memory to about 10 MB when senders outpace APNs, by
        /// slowing them down rather than refusing them.
        public var waitAbove = 4_096

        public init() {}
    }

    /// How a wait for room ended.
    public enum WaitOutcome: Sendable, Hashable {
        /// Fewer than ``Configuration/waitAbove`` pushes wait: send now.
        case room
        /// The budget is closed (shutting down): send nothing.
        case closed
    }

    public let configuration: Configuration
    /// Pushes taken and not yet answered.
    private let count = Atomic(0)
    /// Waiting calls and callbacks: releases take the lock only when there are some.
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

    /// Calls and callbacks waiting in ``waitForRoom()``, ``waitForRoom(_:)`` or
    /// ``waitUntilEmpty()`` now (for tests).
    package var suspendedCalls: Int { sleepers.load(ordering: .relaxed) }

    /// True once ``close()`` was called.
    public var isClosed: Bool { closed.load(ordering: .relaxed) }

    /// Returns once fewer than ``Configuration/waitAbove`` pushes wait, or the budget is closed.
    ///
    /// - Throws: `CancellationError` when the task is cancelled first.
    public func waitForRoom() async throws {
        if hasRoom || isClosed { return }
        let id = state.withLock { $0.makeID() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if let outcome = enqueue(id, .room, .task(continuation)) { continuation.resume(with: outcome) }
            }
        } onCancel: {
            cancel(id)
        }
    }

    /// Calls `resume` once fewer than ``Configuration/waitAbove`` pushes wait, or once the
    /// budget is closed, without a task and without blocking; returns the outcome instead (and
    /// never calls `resume`) when it is known at once.
    ///
    /// `resume` runs on the thread that made the room: where an answered push's completion
    /// returned (an APNs connection's I/O thread, or a task of ``APNSClient/run()`` after
    /// retries), or the thread that calls ``close()``. It must not block. It may send (its push
    /// then takes the room it was given).
    public func waitForRoom(_ resume: @escaping @Sendable (WaitOutcome) -> Void) -> WaitOutcome? {
        if isClosed { return .closed }
        if hasRoom { return .room }
        let id = state.withLock { $0.makeID() }
        return enqueue(id, .room, .callback(resume)).map { _ in isClosed ? .closed : .room }
    }

    /// Returns once no push waits for APNs; at once when the task is cancelled.
    public func waitUntilEmpty() async {
        if count.load(ordering: .sequentiallyConsistent) == 0 { return }
        let id = state.withLock { $0.makeID() }
        try? await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if let outcome = enqueue(id, .empty, .task(continuation)) { continuation.resume(with: outcome) }
            }
        } onCancel: {
            cancel(id)
        }
    }

    /// Ends every wait for room and makes ``APNSClient/send(_:completion:)`` refuse with
    /// ``APNSSendRefusal/Code/unavailable``; pushes already taken still finish.
    public func close() {
        closed.store(true, ordering: .sequentiallyConsistent)
        let waiters = state.withLock { $0.takeAll(.room) }
        if !waiters.isEmpty { sleepers.wrappingSubtract(waiters.count, ordering: .sequentiallyConsistent) }
        for waiter in waiters { waiter.resume(.closed) }
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

    /// Counts a push out: lets the first waiter through, and resumes the drains once none is left.
    ///
    /// A woken callback may send and so release again on this thread (a refused send): such a
    /// nested release only leaves its wake-up to the loop already running here, so that a chain
    /// of waiters cannot grow the stack.
    func release() {
        let left = count.wrappingSubtract(1, ordering: .sequentiallyConsistent).newValue
        // Sequentially consistent on both sides: a waiter counts itself in before it reads
        // `count`, so either it sees this release or this release sees it.
        guard sleepers.load(ordering: .sequentiallyConsistent) > 0 else { return }
        var woken = state.withLock { $0.wake(emptied: left == 0) }
        while !woken.isEmpty {
            sleepers.wrappingSubtract(woken.count, ordering: .sequentiallyConsistent)
            for waiter in woken { waiter.resume(.room) }
            woken = state.withLock { $0.wakeOwed(count: count.load(ordering: .sequentiallyConsistent)) }
        }
    }

    // MARK: Waiting

    /// Adds a waiter unless its wait is over already (then the outcome to resume it with).
    private func enqueue(_ id: Int, _ kind: Waiters.Kind, _ waiter: Waiter) -> Result<Void, any Error>? {
        state.withLock { waiters -> Result<Void, any Error>? in
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
            waiters.append(id, kind, waiter)
            return nil
        }
    }

    private func cancel(_ id: Int) {
        guard let waiter = state.withLock({ $0.cancel(id) }) else { return }
        sleepers.wrappingSubtract(1, ordering: .sequentiallyConsistent)
        waiter.resume(throwing: CancellationError())
    }
}

/// A suspended task or a callback waiting in an ``APNSSendBudget``.
private enum Waiter {
    case task(CheckedContinuation<Void, any Error>)
    case callback(@Sendable (APNSSendBudget.WaitOutcome) -> Void)

    func resume(_ outcome: APNSSendBudget.WaitOutcome) {
        switch self {
        case .task(let continuation): continuation.resume()
        case .callback(let resume): resume(outcome)
        }
    }

    /// Only tasks can be cancelled.
    func resume(throwing error: any Error) {
        if case .task(let continuation) = self { continuation.resume(throwing: error) }
    }
}

/// The waiters of an ``APNSSendBudget``, in arrival order. Ids let a cancelled task take its
/// continuation back; a cancellation that arrives before its task waits is remembered.
private struct Waiters {
    enum Kind { case room, empty }

    private var lastID = 0
    /// Every answered push lets the first one through: taken with `popFirst()`, which skips the
    /// slots of cancelled waiters, so that thousands of waiters cost no rescans.
    private var room = FIFOQueue<(id: Int, waiter: Waiter)>()
    private var drains: [(id: Int, waiter: Waiter)] = []
    var cancelledEarly: Set<Int> = []
    /// A release is resuming waiters: later releases leave their wake-ups to it.
    private var waking = false
    /// Wake-ups for the running release to hand out.
    private var owed = 0

    mutating func makeID() -> Int {
        lastID += 1
        return lastID
    }

    mutating func append(_ id: Int, _ kind: Kind, _ waiter: Waiter) {
        switch kind {
        case .room: room.append((id, waiter))
        case .empty: drains.append((id, waiter))
        }
    }

    mutating func cancel(_ id: Int) -> Waiter? {
        if let index = drains.firstIndex(where: { $0.id == id }) { return drains.remove(at: index).waiter }
        guard let entry = room.remove(where: { $0.id == id }) else {
            cancelledEarly.insert(id)
            return nil
        }
        return entry.waiter
    }

    /// The waiters one release lets through (the first waiting for room, and every drain when
    /// the budget emptied), or none when another release is resuming waiters: that one takes
    /// this wake-up over.
    mutating func wake(emptied: Bool) -> [Waiter] {
        guard !waking else {
            owed += 1
            return []
        }
        var woken = room.popFirst().map { [$0.waiter] } ?? []
        if emptied { woken += takeAll(.empty) }
        waking = !woken.isEmpty
        return woken
    }

    /// The wake-ups owed to the running release, given the count now; ends its loop when none.
    mutating func wakeOwed(count: Int) -> [Waiter] {
        var woken: [Waiter] = []
        while owed > 0, let entry = room.popFirst() {
            owed -= 1
            woken.append(entry.waiter)
        }
        owed = 0
        if count == 0 { woken += takeAll(.empty) }
        waking = !woken.isEmpty
        return woken
    }

    mutating func takeAll(_ kind: Kind) -> [Waiter] {
        switch kind {
        case .room:
            return room.removeAll().map(\.waiter)
        case .empty:
            defer { drains = [] }
            return drains.map(\.waiter)
        }
    }
}
