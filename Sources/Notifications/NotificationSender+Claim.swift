import Foundation
import HeraldCore
import Storage

extension NotificationSender {
    /// Another sender took the notification over while this one sent (its claim expired).
    public struct ClaimLost: Error, CustomStringConvertible {
        public var description: String {
            "another sender took this notification over (this sender's claim expired); it stopped sending"
        }
    }

    /// Writes a pass's results as APNs answers: each push's task submits its own, and the results
    /// submitted while a batch is written go together in the next (at most ``flushEvery``). One
    /// transaction a batch, which also renews the claim; a batch that finds the claim lost fails
    /// every one of its results with ``ClaimLost`` (they are stored all the same: APNs has them).
    func resultWrites(of notification: StoredNotification, owner: String) -> GroupCommit<DeliveryResult, Void> {
        let (store, clock, sendLease) = (self.store, self.clock, self.sendLease)
        return GroupCommit(maximumBatch: flushEvery) { batch in
            // Exempt from cancellation: these pushes reached APNs, so their results are written
            // even when the pass is cancelled, and the batch's other pushes wait for this run.
            let held = try await withDatabaseCancellationIgnored {
                try await store.record(
                    batch,
                    of: notification,
                    ownership: NotificationStore.SendOwnership(
                        owner: owner,
                        until: clock.now().addingTimeInterval(sendLease)
                    )
                )
            }
            guard held else { throw ClaimLost() }
            return batch.map { _ in .success(()) }
        }
    }

    /// Renews `owner`'s claim every third of ``sendLease`` while the pass runs, so that it holds
    /// while nothing is written (APNs slow to answer). Returns when the task is cancelled (the
    /// pass ended).
    ///
    /// - Throws: ``ClaimLost`` when another sender took the notification over.
    func renewClaim(of id: UUID, owner: String) async throws {
        do {
            while true {
                try await clock.sleep(until: clock.now().addingTimeInterval(sendLease / 3))
                let ownership = NotificationStore.SendOwnership(
                    owner: owner,
                    until: clock.now().addingTimeInterval(sendLease)
                )
                guard try await store.renewSend(id, ownership) else { throw ClaimLost() }
            }
        } catch {
            // Cancelled: the pass ended, and what the renewal was doing no longer matters.
            if Task.isCancelled { return }
            throw error
        }
    }
}
