import Foundation
import Storage

/// Tokens per result, kept on the notification's row (`pending_count`, `sent_count`, …,
/// migration 20) by every statement that writes results, in its transaction: reading them is one
/// row whatever the number of tokens.
///
/// The counts add up to `token_count`. A token counts as `pending` until its row says otherwise,
/// including the tokens of an audience's stored pages, which have no row before their first result.
/// Writers of the same notification are serialized on its row (PostgreSQL locks it first; SQLite
/// has one writer), so a change is computed from the statuses it replaces.
extension NotificationStore {
    /// The column holding the count of `status`.
    static func countColumn(_ status: DeliveryStatus) -> String {
        "\(status.rawValue)_count"
    }

    static let countColumns = DeliveryStatus.allCases.map(countColumn).joined(separator: ", ")

    /// Tokens per status, read from the notification's row on `executor` (empty for an unknown id).
    static func counts(id: UUID, on executor: any DatabaseExecutor) async throws -> DeliveryCounts {
        guard
            let row = try await executor.queryFirst(
                "SELECT \(countColumns) FROM notifications WHERE id = $1",
                [SQLValue(id)]
            )
        else { return DeliveryCounts() }
        var counts = DeliveryCounts()
        for status in DeliveryStatus.allCases {
            let count = Int(try row.int(countColumn(status)))
            if count != 0 { counts.counts[status] = count }
        }
        return counts
    }

    /// Adds `changes` (a count per status, negative for tokens that left it) to the notification's
    /// counts, inside the caller's transaction.
    static func addCounts(
        _ changes: [DeliveryStatus: Int],
        to id: UUID,
        on executor: any DatabaseExecutor
    ) async throws {
        let changed = DeliveryStatus.allCases.filter { (changes[$0] ?? 0) != 0 }
        guard !changed.isEmpty else { return }
        var binds: [SQLValue] = [SQLValue(id)]
        let sets = changed.map { status in
            binds.append(SQLValue(changes[status] ?? 0))
            return "\(countColumn(status)) = \(countColumn(status)) + $\(binds.count)"
        }
        try await executor.execute(
            "UPDATE notifications SET \(sets.joined(separator: ", ")) WHERE id = $1",
            binds
        )
    }

    /// How the counts change when `results` replace the statuses in `before` (a token without an
    /// entry was pending: a `pending` row or a page's token without a row). A token written twice
    /// in `results` moves twice, from its previous result.
    static func countChanges(
        _ results: [DeliveryResult],
        replacing before: [String: DeliveryStatus]
    ) -> [DeliveryStatus: Int] {
        var current = before
        var changes: [DeliveryStatus: Int] = [:]
        for result in results {
            let previous = current[result.token] ?? .pending
            guard previous != result.status else { continue }
            changes[previous, default: 0] -= 1
            changes[result.status, default: 0] += 1
            current[result.token] = result.status
        }
        return changes
    }

    /// Moves every pending and retrying token's count to `status` (failing or cancelling all the
    /// tokens without a final result), inside the caller's transaction. Run first in that
    /// transaction: on PostgreSQL the update locks the row, so no result is recorded meanwhile.
    static func countUnfinished(as status: DeliveryStatus, of id: UUID, on executor: any DatabaseExecutor) async throws
    {
        let column = countColumn(status)
        try await executor.execute(
            """
            UPDATE notifications SET \(column) = \(column) + pending_count + retrying_count, pending_count = 0,
                retrying_count = 0
            WHERE id = $1
            """,
            [SQLValue(id)]
        )
    }

    /// Locks the notification's row until the caller's transaction ends (PostgreSQL; SQLite's
    /// transactions already hold the write lock), so that its counts change one writer at a time.
    static func lockCounts(of id: UUID, on executor: any DatabaseExecutor) async throws {
        guard executor.dialect == .postgres else { return }
        _ = try await executor.query("SELECT id FROM notifications WHERE id = $1 FOR UPDATE", [SQLValue(id)])
    }
}
