import Foundation
import HeraldCore
import Jobs
import Synchronization

/// Results of a fan-out waiting to be written: the fan-out loop adds them, the ``ResultWriter``
/// takes them in batches.
final class ResultBuffer: Sendable {
    private struct State {
        var items: [DeliveryResult] = []
        /// When the oldest unwritten result arrived.
        var oldest: Date?
        /// No more results will be added.
        var finished = false
        /// The writer stopped (done, failed or cancelled): nobody makes room any more.
        var writerStopped = false
    }

    /// What the writer should do next.
    enum Next {
        /// Write these (the first of the buffer), then ``removeWritten(_:since:)``.
        case write([DeliveryResult])
        /// Nothing to write before `flushAt` (`nil`: the buffer is empty).
        case wait(flushAt: Date?)
        /// Finished and written.
        case done
    }

    private let state = Mutex(State())
    let wakeup = JobWakeup()
    /// Signalled when results were written (or the writer stopped): the fan-out waits on it.
    private let room = JobWakeup()
    let flushEvery: Int
    let flushInterval: TimeInterval

    init(flushEvery: Int, flushInterval: TimeInterval) {
        self.flushEvery = flushEvery
        self.flushInterval = flushInterval
    }

    /// Adds a result, as of its `updatedAt`; wakes the writer when it has a deadline to set or a
    /// full batch.
    func append(_ result: DeliveryResult) {
        let wake = state.withLock { state -> Bool in
            state.items.append(result)
            if state.items.count == 1 {
                state.oldest = result.updatedAt
                return true
            }
            return state.items.count == flushEvery
        }
        if wake { wakeup.signal() }
    }

    /// No more results: the writer writes the rest and stops.
    func finish() {
        state.withLock { $0.finished = true }
        wakeup.signal()
    }

    func next(at now: Date) -> Next {
        state.withLock { state in
            if state.items.isEmpty { return state.finished ? .done : .wait(flushAt: nil) }
            let flushAt = (state.oldest ?? now).addingTimeInterval(flushInterval)
            if state.items.count >= flushEvery || state.finished || now >= flushAt {
                return .write(Array(state.items.prefix(flushEvery)))
            }
            return .wait(flushAt: flushAt)
        }
    }

    /// Drops the first `count` results once written; those left are counted as waiting since
    /// `start` (the write's start: they arrived during it).
    func removeWritten(_ count: Int, since start: Date) {
        state.withLock { state in
            state.items.removeFirst(min(count, state.items.count))
            state.oldest = state.items.isEmpty ? nil : start
        }
        room.signal()
    }

    /// The writer ended: a fan-out waiting for room stops waiting.
    func writerStopped() {
        state.withLock { $0.writerStopped = true }
        room.signal()
    }

    /// Returns once fewer than `limit` results wait for their write, the writer stopped, or the
    /// task is cancelled.
    func waitForRoom(below limit: Int) async {
        while !Task.isCancelled {
            let full = state.withLock { !$0.writerStopped && $0.items.count >= limit }
            guard full else { return }
            await room.wait(for: nil)
        }
    }

    /// Takes every result not written yet.
    func unwritten() -> [DeliveryResult] {
        state.withLock { state in
            defer {
                state.items = []
                state.oldest = nil
            }
            return state.items
        }
    }

    /// Returns at `deadline` on `clock`, or earlier when woken.
    func wait(until deadline: Date, clock: any HeraldClock) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await clock.sleep(until: deadline) }
            group.addTask { await self.wakeup.wait(for: nil) }
            defer { group.cancelAll() }
            try await group.next()
        }
        try Task.checkCancellation()
    }
}

/// Writes a fan-out's results as they come, and keeps the sender's claim on the notification
/// alive meanwhile (each write renews it; so does a renewal every third of the lease when nothing
/// was written).
struct ResultWriter: Sendable {
    let store: NotificationStore
    let notification: StoredNotification
    let owner: String
    let clock: any HeraldClock
    let sendLease: TimeInterval

    /// Another sender took the notification over while this one sent (its claim expired).
    struct ClaimLost: Error, CustomStringConvertible {
        var description: String {
            "another sender took this notification over (this sender's claim expired); it stopped sending"
        }
    }

    /// Writes until the buffer is finished and empty. Returns without error when the task is
    /// cancelled, leaving what it did not write in the buffer.
    func run(_ buffer: ResultBuffer) async throws {
        var renewAt = clock.now().addingTimeInterval(sendLease / 3)
        do {
            while true {
                let now = clock.now()
                switch buffer.next(at: now) {
                case .done:
                    return
                case .write(let items):
                    try await write(items)
                    buffer.removeWritten(items.count, since: now)
                    renewAt = now.addingTimeInterval(sendLease / 3)
                case .wait(let flushAt):
                    if now >= renewAt {
                        guard try await store.renewSend(notification.id, claim(from: now)) else { throw ClaimLost() }
                        renewAt = now.addingTimeInterval(sendLease / 3)
                        continue
                    }
                    try await buffer.wait(until: min(flushAt ?? renewAt, renewAt), clock: clock)
                }
            }
        } catch is CancellationError {
            return
        }
    }

    /// Writes `results` and renews the claim in one transaction.
    func write(_ results: [DeliveryResult]) async throws {
        guard try await store.record(results, of: notification, ownership: claim(from: clock.now())) else {
            throw ClaimLost()
        }
    }

    private func claim(from now: Date) -> NotificationStore.SendOwnership {
        NotificationStore.SendOwnership(owner: owner, until: now.addingTimeInterval(sendLease))
    }
}
