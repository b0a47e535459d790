public import Foundation
import Synchronization

/// A ``HeraldClock`` that moves only when a test (or the simulator's user) moves it.
///
/// Sleeps on it are registered and end when the clock is moved to or past their deadline, or
/// with `CancellationError` when their task is cancelled; ``waitForSleep(within:matching:)`` lets
/// a test wait until the code under test sleeps, and ``advanceToNextDeadline(within:)`` steps it
/// past that sleep. ``uptime()`` moves with every step forward and never back, so that intervals
/// stay monotonic when ``set(_:)`` moves the wall time back; ``jump(to:)`` moves the wall time
/// alone.
public final class ManualClock: HeraldClock {
    private struct Sleeper {
        var id: Int
        var deadline: Date
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct Watcher {
        var id: Int
        var matches: @Sendable (Date) -> Bool
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Date
        var uptime: Duration = .zero
        var nextID = 0
        var sleepCount = 0
        var sleepers: [Sleeper] = []
        var watchers: [Watcher] = []
        /// Ids of sleeps or watches cancelled before they were registered.
        var cancelled: Set<Int> = []
    }

    private let state: Mutex<State>

    /// Starts at `start`: by default a fixed instant, so that schedules are reproducible.
    public init(_ start: Date = Date(timeIntervalSince1970: 1_790_000_000)) {
        state = Mutex(State(now: start))
    }

    public func now() -> Date { state.withLock { $0.now } }

    public func uptime() -> Duration { state.withLock { $0.uptime } }

    /// How many sleeps have started on this clock, those that ended at once included.
    public var sleepCount: Int { state.withLock { $0.sleepCount } }

    /// The earliest deadline of the sleeps now waiting, `nil` when none waits.
    public var nextDeadline: Date? { state.withLock { $0.sleepers.map(\.deadline).min() } }

    /// Moves the clock `seconds` forward, waking every sleep whose deadline has come.
    public func advance(_ seconds: TimeInterval) {
        move(uptimeStep: nil) { $0.now.addingTimeInterval(seconds) }
    }

    /// Moves the clock `duration` forward, waking every sleep whose deadline has come.
    public func advance(by duration: Duration) {
        move(uptimeStep: duration) { $0.now.addingTimeInterval(duration.timeInterval) }
    }

    /// Sets the wall time to `date` (back is allowed: a wall clock can be set back; ``uptime()``
    /// then stays where it is), waking every sleep whose deadline has come.
    public func set(_ date: Date) {
        move(uptimeStep: nil) { _ in date }
    }

    /// Sets the wall time to `date` and leaves ``uptime()`` where it is: the wall clock was set or
    /// stepped (by hand, by NTP) while monotonic time ran on. Wakes every sleep whose deadline has
    /// come.
    public func jump(to date: Date) {
        move(uptimeStep: .zero) { _ in date }
    }

    /// Waits until something sleeps on this clock (one already asleep counts), for at most
    /// `seconds` of real time, then moves the clock to the earliest deadline, waking that sleep:
    /// one step of a retry or backoff loop under test.
    ///
    /// - Returns: the deadline the clock moved to.
    /// - Throws: ``ManualClockError`` when nothing slept in time.
    @discardableResult
    public func advanceToNextDeadline(within seconds: Double = 20) async throws -> Date {
        while true {
            try await waitForSleep(within: seconds)
            // A sleep cancelled since the wait leaves nothing to move to: wait for the next one.
            let reached = move(uptimeStep: nil) { state in
                state.sleepers.map(\.deadline).min().map { max(state.now, $0) }
            }
            if let reached { return reached }
        }
    }

    /// Moves the wall time to what `change` returns (nowhere when `nil`), and ``uptime()`` by
    /// `uptimeStep` (exact), or else by the wall time's step when it is forward.
    ///
    /// - Returns: the new wall time, `nil` when `change` returned `nil`.
    @discardableResult
    private func move(uptimeStep: Duration?, _ change: (State) -> Date?) -> Date? {
        let (moved, due) = state.withLock { state -> (Date?, [Sleeper]) in
            guard let next = change(state) else { return (nil, []) }
            let step = next.timeIntervalSince(state.now)
            if let uptimeStep {
                state.uptime += max(.zero, uptimeStep)
            } else if step > 0 {
                state.uptime += Duration(timeInterval: step)
            }
            state.now = next
            return (next, Self.takeDue(&state))
        }
        for sleeper in due { sleeper.continuation.resume() }
        return moved
    }

    public func sleep(until deadline: Date) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (resume, watchers) = state.withLock { state -> (Result<Void, any Error>?, [Watcher]) in
                    state.sleepCount += 1
                    if state.cancelled.remove(id) != nil { return (.failure(CancellationError()), []) }
                    if deadline <= state.now { return (.success(()), []) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    let (matched, rest) = state.watchers.partitioned { $0.matches(deadline) }
                    state.watchers = rest
                    return (nil, matched)
                }
                for watcher in watchers { watcher.continuation.resume() }
                if let resume { continuation.resume(with: resume) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else {
                    state.cancelled.insert(id)
                    return nil
                }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
        state.withLock { _ = $0.cancelled.remove(id) }
    }

    /// Waits until something sleeps on this clock with a deadline `matching` (one already asleep
    /// counts), for at most `seconds` of real time.
    ///
    /// - Throws: ``ManualClockError`` when nothing did in time.
    public func waitForSleep(
        within seconds: Double = 20,
        matching: @escaping @Sendable (Date) -> Bool = { _ in true }
    ) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await withTaskCancellationHandler {
                    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                        let resume = self.state.withLock { state -> Result<Void, any Error>? in
                            if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                            if state.sleepers.contains(where: { matching($0.deadline) }) { return .success(()) }
                            state.watchers.append(Watcher(id: id, matches: matching, continuation: continuation))
                            return nil
                        }
                        if let resume { continuation.resume(with: resume) }
                    }
                } onCancel: {
                    let watcher = self.state.withLock { state -> Watcher? in
                        guard let index = state.watchers.firstIndex(where: { $0.id == id }) else {
                            state.cancelled.insert(id)
                            return nil
                        }
                        return state.watchers.remove(at: index)
                    }
                    watcher?.continuation.resume(throwing: CancellationError())
                }
            }
            group.addTask {
                try await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
                throw ManualClockError(description: "nothing slept on the manual clock within \(seconds) s")
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    private static func takeDue(_ state: inout State) -> [Sleeper] {
        let now = state.now
        let (due, rest) = state.sleepers.partitioned { $0.deadline <= now }
        state.sleepers = rest
        return due
    }
}

/// A wait on a ``ManualClock`` that ran out.
public struct ManualClockError: Error, CustomStringConvertible {
    public let description: String
}

extension Array {
    fileprivate func partitioned(by belongs: (Element) -> Bool) -> (matching: [Element], rest: [Element]) {
        var matching: [Element] = []
        var rest: [Element] = []
        for element in self {
            if belongs(element) { matching.append(element) } else { rest.append(element) }
        }
        return (matching, rest)
    }
}
