import Foundation
import Synchronization

/// A `Clock` with `Duration` instants that moves only when a test says so, with a wall-clock view
/// of the same time (HeraldCore's `ManualClock` is the `HeraldClock` one, in dates).
///
/// `sleep` suspends until `advance` moves `now` past the deadline; `nextSleeperDeadline()` waits
/// until someone sleeps, so a test can step a retry loop without real waiting.
final class ManualDurationClock: Clock, Sendable {
    struct Instant: InstantProtocol, CustomStringConvertible {
        var offset: Duration

        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
        var description: String { "+\(offset)" }
    }

    private struct Sleeper {
        var id: UInt64
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID: UInt64 = 0
        var sleepers: [Sleeper] = []
        var cancelled: Set<UInt64> = []
        var sleepWaiters: [CheckedContinuation<Void, Never>] = []
        var sleepCount = 0
    }

    private let state = Mutex(State())
    /// The wall-clock time at `Instant(offset: .zero)`.
    let epoch: Date

    init(epoch: Date = Date(timeIntervalSince1970: 1_700_000_000)) {
        self.epoch = epoch
    }

    var now: Instant { state.withLock { $0.now } }
    var minimumResolution: Duration { .zero }

    /// The wall-clock time matching `now`.
    var wallNow: Date {
        let offset = now.offset.components
        return epoch.addingTimeInterval(Double(offset.seconds) + Double(offset.attoseconds) / 1e18)
    }

    /// A wall clock for code under test.
    var wallClock: @Sendable () -> Date {
        { [self] in wallNow }
    }

    /// How many sleeps have started so far.
    var sleepCount: Int { state.withLock { $0.sleepCount } }

    func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Action { case resume, cancel, wait([CheckedContinuation<Void, Never>]) }
                let action = state.withLock { state -> Action in
                    state.sleepCount += 1
                    if state.cancelled.remove(id) != nil { return .cancel }
                    if deadline <= state.now { return .resume }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    defer { state.sleepWaiters = [] }
                    return .wait(state.sleepWaiters)
                }
                switch action {
                case .resume: continuation.resume()
                case .cancel: continuation.resume(throwing: CancellationError())
                case .wait(let waiters): waiters.forEach { $0.resume() }
                }
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
    }

    /// Moves time forward, waking every sleeper whose deadline has come.
    func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        due.forEach { $0.continuation.resume() }
    }

    /// Moves time to `instant` (if later).
    func advance(to instant: Instant) {
        let delta = now.duration(to: instant)
        if delta > .zero { advance(by: delta) }
    }

    /// Waits until at least one task sleeps, and returns the earliest deadline.
    func nextSleeperDeadline() async -> Instant {
        while true {
            let deadline = state.withLock { state in state.sleepers.map(\.deadline).min() }
            if let deadline { return deadline }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if !state.sleepers.isEmpty { return true }
                    state.sleepWaiters.append(continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }
}
