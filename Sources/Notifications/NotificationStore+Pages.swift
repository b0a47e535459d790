import Foundation
import HeraldCore
import Storage

/// The pages of an audience resolved at send time (`notification_pages`, migration 15).
///
/// A page of devices read from the registry is stored as one row (its first ordinal and its tokens,
/// in order) in the transaction that moves the resume cursor past it. A token of a page gets its
/// `notification_deliveries` row only with its first result, so a device costs one row write
/// instead of a `pending` row and its update. A token of a stored page without a row is pending.
///
/// A page goes when every token of it has a row: found so by the resume scan, or when the
/// notification reaches a final status (cancelling and failing first give the tokens without a
/// result a row, `cancelled` or `failed`).
extension NotificationStore {
    /// One stored page: its tokens are ordinals `first ..< first + tokens.count`.
    struct StoredPage: Sendable {
        var first: Int
        var tokens: [String]
    }

    /// Stores a page of tokens from `first`, inside the caller's transaction.
    static func insertPage(
        _ tokens: [String],
        first: Int,
        of id: UUID,
        on executor: any DatabaseExecutor
    )
        async throws
    {
        guard !tokens.isEmpty else { return }
        try await executor.execute(
            "INSERT INTO notification_pages (notification_id, first_ordinal, token_count, tokens) VALUES ($1, $2, $3, $4)",
            [SQLValue(id), SQLValue(first), SQLValue(tokens.count), .text(tokens.joined(separator: ","))]
        )
    }

    /// The tokens of pages stored before ordinal `before` that have no result row yet, in ordinal
    /// order, from the first page that ends after ordinal `after`: those of one page, with the
    /// page's last ordinal (where the next call starts). Pages found fully recorded on the way are
    /// deleted. `nil` when no such page has a token without a row.
    ///
    /// Only a pass resuming after a crash (or the claim's loss) finds any. `before` is the
    /// notification's token count when the pass claimed it: the pages the pass stores itself come
    /// after, and are sent as they are stored.
    func unrecordedPageTokens(
        id: UUID,
        after: Int,
        before: Int,
        at now: Date
    ) async throws
        -> (tokens: [DeliveryResult], through: Int)?
    {
        var after = after
        while let page = try await page(of: id, endingAfter: after, on: database), page.first < before {
            after = page.first + page.tokens.count - 1
            let missing = try await Self.unrecorded(page, of: id, on: database)
            if !missing.isEmpty {
                let tokens = missing.map {
                    DeliveryResult(token: $0.token, ordinal: $0.ordinal, status: .pending, updatedAt: now)
                }
                return (tokens, after)
            }
            try await database.execute(
                "DELETE FROM notification_pages WHERE notification_id = $1 AND first_ordinal = $2",
                [SQLValue(id), SQLValue(page.first)]
            )
        }
        return nil
    }

    /// Gives every token of the stored pages without a row one with `status` and `reason`, then
    /// deletes the pages, inside the caller's transaction; returns how many rows it wrote.
    func recordUnrecordedPages(
        _ id: UUID,
        as status: DeliveryStatus,
        reason: String,
        at now: Date,
        on executor: any DatabaseExecutor
    ) async throws -> Int {
        var after = -1
        var written = 0
        while let page = try await page(of: id, endingAfter: after, on: executor) {
            after = page.first + page.tokens.count - 1
            let missing = try await Self.unrecorded(page, of: id, on: executor)
            var start = 0
            while start < missing.count {
                let end = start + Self.rowsPerStatement(missing.count - start, on: executor.dialect)
                var sql = """
                    INSERT INTO notification_deliveries (notification_id, token, ordinal, status, reason, attempts,
                        updated_at) VALUES
                    """
                var binds: [SQLValue] = [SQLValue(id), .text(status.rawValue), .text(reason), SQLValue(now)]
                for index in start..<end {
                    if index > start { sql += "," }
                    sql += " ($1, $\(binds.count + 1), $\(binds.count + 2), $2, $3, 0, $4)"
                    binds += [.text(missing[index].token), SQLValue(missing[index].ordinal)]
                }
                written += try await executor.execute(sql, binds)
                start = end
            }
        }
        try await deletePages(of: id, on: executor)
        return written
    }

    /// Deletes the notification's stored pages (every token of them has a row).
    func deletePages(of id: UUID, on executor: any DatabaseExecutor) async throws {
        try await executor.execute("DELETE FROM notification_pages WHERE notification_id = $1", [SQLValue(id)])
    }

    private func page(
        of id: UUID,
        endingAfter after: Int,
        on executor: any DatabaseExecutor
    ) async throws
        -> StoredPage?
    {
        // A page ends after `after` when its last ordinal (first + count - 1) is past it; pages do
        // not overlap, so the first such page in order is the one holding `after + 1`, or the next.
        guard
            let row = try await executor.queryFirst(
                """
                SELECT first_ordinal, tokens FROM notification_pages
                WHERE notification_id = $1 AND first_ordinal + token_count > $2
                ORDER BY first_ordinal LIMIT 1
                """,
                [SQLValue(id), SQLValue(after + 1)]
            )
        else { return nil }
        let text = try row.string("tokens")
        return StoredPage(
            first: Int(try row.int("first_ordinal")),
            tokens: text.split(separator: ",").map(String.init)
        )
    }

    /// The tokens of `page` that have no row, with their ordinals.
    private static func unrecorded(
        _ page: StoredPage,
        of id: UUID,
        on executor: any DatabaseExecutor
    )
        async throws -> [(token: String, ordinal: Int)]
    {
        let recorded = Set(
            try await executor.query(
                """
                SELECT ordinal FROM notification_deliveries
                WHERE notification_id = $1 AND ordinal >= $2 AND ordinal < $3
                """,
                [SQLValue(id), SQLValue(page.first), SQLValue(page.first + page.tokens.count)]
            ).map { Int(try $0.int("ordinal")) }
        )
        return page.tokens.enumerated().compactMap { offset, token in
            recorded.contains(page.first + offset) ? nil : (token, page.first + offset)
        }
    }
}
