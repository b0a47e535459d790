import Foundation
import Glibc
import Synchronization

/// What a child writes to one pipe, collected by a reader thread, with waits for a match or for
/// the end of output (events, not polling).
public final class CapturedOutput: Sendable {
    private struct Waiter {
        let match: @Sendable (String) -> Bool
        let continuation: CheckedContinuation<String?, any Error>
    }

    private struct State {
        var bytes: [UInt8] = []
        var ended = false
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0

        var text: String { String(decoding: bytes, as: UTF8.self) }
    }

    private let state: Mutex<State>

    /// Starts a reader thread on `descriptor`, which it closes at the end of output; with `nil`
    /// the output is empty and already ended.
    init(reading descriptor: Int32?, name: String) {
        state = Mutex(State(ended: descriptor == nil))
        guard let descriptor else { return }
        Thread.detachNewThread { [self] in
            Thread.current.name = name
            read(descriptor)
        }
    }

    /// Everything read so far.
    public var text: String { state.withLock { $0.text } }

    /// Waits until the output so far satisfies `match` and returns it, or returns `nil` when the
    /// output ends without a match.
    ///
    /// - Throws: `CancellationError` when the waiting task is cancelled.
    public func waitUntil(_ match: @escaping @Sendable (String) -> Bool) async throws -> String? {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let now = state.withLock { state -> Result<String?, any Error>? in
                    let text = state.text
                    if match(text) { return .success(text) }
                    if state.ended { return .success(nil) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters[id] = Waiter(match: match, continuation: continuation)
                    return nil
                }
                if let now { continuation.resume(with: now) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Waits for the end of output (the child and everything it passed the pipe to closed it)
    /// and returns all of it.
    public func waitForEnd() async -> String {
        // Only cancellation ends this wait early; the text so far is the best answer then.
        (try? await waitUntil { _ in false }) ?? text
    }

    private func read(_ descriptor: Int32) {
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            let ready = state.withLock { state -> [(CheckedContinuation<String?, any Error>, String)] in
                state.bytes += buffer[..<count]
                let text = state.text
                let matched = state.waiters.filter { $0.value.match(text) }
                for id in matched.keys { state.waiters[id] = nil }
                return matched.values.map { ($0.continuation, text) }
            }
            for (continuation, text) in ready { continuation.resume(returning: text) }
        }
        let rest = state.withLock { state in
            state.ended = true
            defer { state.waiters = [:] }
            return state.waiters.values.map(\.continuation)
        }
        for continuation in rest { continuation.resume(returning: nil) }
    }
}
