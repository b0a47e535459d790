public import Foundation
import HeraldCore
public import Storage

extension JobQueue {
    /// Deletes a job that is still pending, leaving no trace in the queue (unlike
    /// ``cancel(id:)``, which keeps it as `cancelled`): for a backup job whose work was done
    /// another way. A job already claimed or finished is left alone.
    ///
    /// - Parameter executor: the caller's transaction, to delete the job together with what
    ///   made it unnecessary; the queue's database when `nil`.
    /// - Returns: whether the job was pending and is gone.
    @discardableResult
    public func discard(id: UUID, on executor: (any DatabaseExecutor)? = nil) async throws -> Bool {
        try await (executor ?? database).execute(
            "DELETE FROM jobs WHERE id = $1 AND status = 'pending'",
            [.text(RequestIdentifier.lowercaseString(id))]
        ) > 0
    }
}
