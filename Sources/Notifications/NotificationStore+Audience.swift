public import Audiences
import Devices
public import Foundation
import HeraldCore
import Storage

/// Where the send of an audience resolved at send time stands: the audience as given and how far
/// the registry has been read.
public struct AudienceState: Sendable, Hashable {
    public var audience: Audience
    /// Where the registry's next page starts (the resolver's opaque cursor); `nil` before the
    /// first page, and after the last.
    public var cursor: String?
    /// When the last page was read; `nil` while devices remain to be read.
    public var resolvedAt: Date?
}

extension NotificationStore {
    /// The stored audience of a notification sent to users, tags or all, with its resume cursor;
    /// `nil` for a tokens notification (its tokens are its rows) or an unknown id.
    public func audienceState(id: UUID) async throws -> AudienceState? {
        guard
            let row = try await database.queryFirst(
                "SELECT audience, audience_cursor, audience_resolved_at FROM notifications WHERE id = $1",
                [SQLValue(id)]
            ), let text = try row.optionalString("audience")
        else { return nil }
        guard let audience = Audience(jsonText: text) else {
            throw DatabaseError(code: .typeMismatch, message: "notifications.audience holds no audience")
        }
        return AudienceState(
            audience: audience,
            cursor: try row.optionalString("audience_cursor"),
            resolvedAt: try row.optionalDate("audience_resolved_at")
        )
    }

    /// Stores one page of resolved devices (``insertPage(_:first:of:on:)``: their rows come with
    /// their results), numbered after the notification's tokens so far, and moves the resume
    /// cursor to `cursor` (the next page's; `nil` after the last page, which records that
    /// resolution is finished), all in one transaction that also renews the sender's claim.
    /// A crash before the commit rereads the page; after it, the page is there to send.
    ///
    /// - Returns: the page's tokens as `pending` results, or `nil` (nothing stored) when
    ///   `ownership` no longer holds the notification.
    func appendResolved(
        _ tokens: [String],
        to id: UUID,
        cursor: String?,
        ownership: SendOwnership,
        at now: Date
    ) async throws -> [DeliveryResult]? {
        do {
            return try await database.transaction { tx in
                // The claim check and the count's increase in one statement: a sender that lost
                // the notification stores nothing.
                let rows = try await tx.query(
                    """
                    UPDATE notifications SET token_count = token_count + $3, pending_count = pending_count + $3,
                        send_lease_expires_at = $4,
                        audience_cursor = $5, audience_resolved_at = $6, updated_at = $7
                    WHERE id = $1 AND send_owner = $2
                    RETURNING token_count
                    """,
                    [
                        SQLValue(id), .text(ownership.owner), SQLValue(tokens.count), SQLValue(ownership.until),
                        SQLValue(cursor), cursor == nil ? SQLValue(now) : .null, SQLValue(now),
                    ]
                )
                guard let row = rows.first else { throw ClaimNotHeld() }
                let first = Int(try row.int("token_count")) - tokens.count
                let results = tokens.enumerated().map { offset, token in
                    DeliveryResult(token: token, ordinal: first + offset, status: .pending, updatedAt: now)
                }
                try await Self.insertPage(tokens, first: first, of: id, on: tx)
                return results
            }
        } catch is ClaimNotHeld {
            return nil
        }
    }

    private struct ClaimNotHeld: Error {}

    /// `pending` rows for `results`, ``rowsPerStatement(_:on:)`` per statement.
    static func insertPending(
        _ results: [DeliveryResult],
        of id: UUID,
        at now: Date,
        on executor: any DatabaseExecutor
    ) async throws {
        var start = 0
        while start < results.count {
            let end = start + rowsPerStatement(results.count - start, on: executor.dialect)
            var sql =
                "INSERT INTO notification_deliveries (notification_id, token, ordinal, status, attempts, updated_at) VALUES "
            var binds: [SQLValue] = [SQLValue(id), SQLValue(now)]
            binds.reserveCapacity(2 + (end - start) * 2)
            for index in start..<end {
                if index > start { sql += ", " }
                let base = binds.count
                sql += "($1, $\(base + 1), $\(base + 2), 'pending', 0, $2)"
                binds.append(.text(results[index].token))
                binds.append(SQLValue(results[index].ordinal))
            }
            try await executor.execute(sql, binds)
            start = end
        }
    }
}
