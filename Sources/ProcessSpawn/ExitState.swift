import Foundation
import Glibc
import Synchronization

/// Reaps one child on a thread of its own and hands its termination to whoever waits.
///
/// The thread first waits for the exit without reaping (`waitid` with `WNOWAIT`), then reaps
/// under the lock that ``signal(_:)`` holds while it sends: until the child is reaped its pid
/// cannot be reused, so a signal never reaches another process.
final class ExitState: Sendable {
    private struct State {
        var termination: ChildProcess.Termination?
        var waiters: [UInt64: CheckedContinuation<ChildProcess.Termination, any Error>] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let pid: Int32
    private let state = Mutex(State())

    init(pid: Int32) {
        self.pid = pid
        Thread.detachNewThread { [self] in
            Thread.current.name = "child-\(pid)-wait"
            reap()
        }
    }

    var termination: ChildProcess.Termination? { state.withLock { $0.termination } }

    @discardableResult
    func signal(_ signal: Int32) -> Bool {
        state.withLock { state in
            guard state.termination == nil else { return false }
            return kill(pid, signal) == 0
        }
    }

    func wait() async throws -> ChildProcess.Termination {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let now = state.withLock { state -> Result<ChildProcess.Termination, any Error>? in
                    if let termination = state.termination { return .success(termination) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters[id] = continuation
                    return nil
                }
                if let now { continuation.resume(with: now) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(throwing: CancellationError())
        }
    }

    private func reap() {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 {
            guard errno == EINTR else { break }
        }
        let (termination, waiters) = state.withLock { state in
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0, errno == EINTR {}
            // WIFEXITED/WEXITSTATUS/WTERMSIG are macros Swift cannot import: the low 7 bits are
            // the terminating signal (0 for a normal exit), the next 8 the exit code.
            let signal = status & 0x7f
            let termination: ChildProcess.Termination =
                signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
            state.termination = termination
            defer { state.waiters = [:] }
            return (termination, Array(state.waiters.values))
        }
        for waiter in waiters { waiter.resume(returning: termination) }
    }
}
