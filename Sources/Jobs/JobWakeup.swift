public import Foundation
public import HeraldCore
import Synchronization

/// A wake-up call for one waiter: ``signal()`` ends the current or the next ``wait(until:)``.
///
/// Signals are not counted: several before a wait end that one wait only, which is what a worker
/// that re-reads the queue after each wake needs.
public final class JobWakeup: Sendable {
    private struct State {
        var signalled = false
        var waiter: CheckedContinuation<Void, Never>?
        var cancelled = false
    }

    private let state = Mutex(State())
    /// The clock timed waits sleep on.
    public let clock: any HeraldClock

    public init(clock: any HeraldClock = SystemClock()) {
        self.clock = clock
    }

    /// Wakes the waiter, or the next one if nobody waits.
    public func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.signalled = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns on a signal, after `timeout` on ``clock`` (never when `nil`), or when the task is
    /// cancelled.
    public func wait(for timeout: Duration?) async {
        await wait(until: timeout.map { clock.now().addingTimeInterval($0.timeInterval) })
    }

    /// Returns on a signal, once ``clock`` reads `deadline` (never when `nil`), or when the task is
    /// cancelled.
    public func wait(until deadline: Date?) async {
        if state.withLock({ state in
            defer { state.signalled = false }
            return state.signalled
        }) {
            return
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitForSignal() }
            if let deadline {
                group.addTask { try? await self.clock.sleep(until: deadline) }
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// Returns on a signal only, even in a cancelled task: for a worker that has been cancelled
    /// and still waits for the jobs it started to end (each end signals).
    public func waitIgnoringCancellation() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if state.signalled {
                    state.signalled = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    private func waitForSignal() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.signalled || state.cancelled {
                        state.signalled = false
                        state.cancelled = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard let waiter = state.waiter else {
                    state.cancelled = true
                    return nil
                }
                state.waiter = nil
                return waiter
            }
            waiter?.resume()
        }
        state.withLock { $0.cancelled = false }
    }
}
