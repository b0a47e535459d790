package import APNs
import Audiences
public import Devices
public import Foundation
public import HeraldCore
public import Storage

/// The `notifications` and `notification_deliveries` tables (migration 3), with the same SQL on
/// SQLite and PostgreSQL. Tokens APNs calls dead go to the device registry (``devices``), in
/// the transaction that stores their results.
///
/// A notification's tokens are rows of `notification_deliveries` keyed by (notification, token),
/// numbered by `ordinal` in the order given. A row's status moves from `pending` to a result
/// when APNs has answered for it, so a send interrupted by a crash resends only the tokens
/// without a final result. The devices of an audience are stored a page to a row instead
/// (`notification_pages`), and get their row with their first result.
public struct NotificationStore: Sendable {
    public let database: any Database
    /// Where dead tokens are recorded: the registry marks their devices invalid.
    public let devices: DeviceStore
    /// Told of each notification that reaches a final status, in that transaction.
    public let finishObserver: (any NotificationFinishObserver)?
    /// Rows per multi-row `INSERT` (9 binds each, well under both databases' bind limits).
    static let batchSize = 500

    /// The rows of the next multi-row statement with `remaining` rows left to write on `dialect`.
    ///
    /// On SQLite, the largest of a few fixed sizes that fits: a statement's text then depends only
    /// on its row count, so a handful of texts are prepared once and stay in the connection's
    /// statement cache. Preparing a new one costs time quadratic in its placeholders, as SQLite
    /// finds each `$n` by a linear search of the names before it.
    static func rowsPerStatement(_ remaining: Int, on dialect: SQLDialect) -> Int {
        guard dialect == .sqlite else { return min(batchSize, remaining) }
        for size in [256, 64, 16, 4] where remaining >= size { return size }
        return min(1, remaining)
    }

    /// - Parameter devices: the registry on the same database; `nil`: one without event hook.
    public init(
        database: any Database,
        devices: DeviceStore? = nil,
        finishObserver: (any NotificationFinishObserver)? = nil
    ) {
        self.database = database
        self.devices = devices ?? DeviceStore(database: database)
        self.finishObserver = finishObserver
    }

    static let columns = """
        id, app, environment, push_type, topic, priority, expiration, collapse_id, payload, send_at, status, \
        token_count, failure_reason, job_id, created_at, updated_at, audience_kind, audience_resolved_at
        """

    // MARK: Writing

    /// Inserts the notification and one `pending` row per token, inside the caller's transaction.
    /// An audience resolved at send time (`audience`) is stored with it; its rows come later.
    func insert(
        _ notification: StoredNotification,
        tokens: [String],
        audience: Audience? = nil,
        on executor: any DatabaseExecutor
    ) async throws {
        try await executor.execute(
            """
            INSERT INTO notifications (\(Self.columns), audience, pending_count)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $12)
            """,
            [
                SQLValue(notification.id), .text(notification.app), .text(notification.environment.rawValue),
                .text(notification.pushType.headerValue), .text(notification.topic),
                SQLValue(notification.priority?.rawValue), Self.expirationValue(notification.expiration),
                SQLValue(notification.collapseID), .text(notification.payload), SQLValue(notification.sendAt),
                .text(notification.status.rawValue), SQLValue(notification.tokenCount),
                SQLValue(notification.failureReason), SQLValue(notification.jobID), SQLValue(notification.createdAt),
                SQLValue(notification.updatedAt), .text(notification.audienceKind.rawValue),
                SQLValue(notification.audienceResolvedAt), SQLValue(audience.map(\.jsonText)),
            ]
        )
        let rows = tokens.enumerated().map { ordinal, token in
            DeliveryResult(token: token, ordinal: ordinal, status: .pending, updatedAt: notification.createdAt)
        }
        try await Self.insertPending(rows, of: notification.id, at: notification.createdAt, on: executor)
    }

    /// Stores results (upserting on (notification, token)) and the dead tokens among them, in one
    /// transaction per call. With `ownership`, the same transaction extends the sender's claim
    /// (see ``claimSend(_:owner:until:at:)``); returns `false` when the sender no longer held it
    /// (the results are stored anyway: APNs has them).
    @discardableResult
    func record(
        _ results: [DeliveryResult],
        of notification: StoredNotification,
        ownership: SendOwnership? = nil
    ) async throws -> Bool {
        guard !results.isEmpty else {
            guard let ownership else { return true }
            return try await renewSend(notification.id, ownership)
        }
        let (held, invalidated) = try await database.transaction { tx -> (Bool, Bool) in
            // Renewing the claim updates the notification's row, which locks it for the counts.
            var held = true
            if let ownership {
                held = try await self.renewSend(notification.id, ownership, on: tx)
            } else {
                try await Self.lockCounts(of: notification.id, on: tx)
            }
            let before = try await Self.upsert(results, of: notification.id, on: tx)
            try await Self.addCounts(Self.countChanges(results, replacing: before), to: notification.id, on: tx)
            let dead = results.filter { $0.status == .dead }.map { result in
                DeviceInvalidation(
                    token: result.token,
                    reason: result.reason ?? "Unregistered",
                    invalidAt: result.invalidAt ?? result.updatedAt,
                    recordedAt: result.updatedAt,
                    notificationID: notification.id
                )
            }
            let invalidated =
                dead.isEmpty
                ? []
                : try await self.devices.invalidate(
                    dead,
                    app: notification.app,
                    environment: notification.environment,
                    on: tx
                )
            return (held, !invalidated.isEmpty)
        }
        if invalidated { devices.events?.invalidationsCommitted() }
        return held
    }

    /// Who is sending a notification, and until when the claim holds without being renewed.
    struct SendOwnership: Sendable, Hashable {
        var owner: String
        var until: Date
    }

    /// Claims the send of a notification for `owner` (a compare-and-set): it moves to `sending`
    /// from `scheduled`, `sending` or `failed` only when no other sender holds a live claim.
    /// Returns it as stored, or `nil` when it is in another status, another sender holds it, or it
    /// does not exist.
    func claimSend(_ id: UUID, owner: String, until: Date, at now: Date) async throws -> StoredNotification? {
        let rows = try await database.query(
            """
            UPDATE notifications SET status = 'sending', failure_reason = NULL, updated_at = $3, send_owner = $2,
                send_lease_expires_at = $4
            WHERE id = $1 AND status IN ('scheduled', 'sending', 'failed')
                AND (send_owner IS NULL OR send_owner = $2 OR send_lease_expires_at < $3)
            RETURNING \(Self.columns)
            """,
            [SQLValue(id), .text(owner), SQLValue(now), SQLValue(until)]
        )
        return try rows.first.map(Self.notification(from:))
    }

    /// Extends `ownership`'s claim; `false` when another sender holds the notification now.
    func renewSend(
        _ id: UUID,
        _ ownership: SendOwnership,
        on executor: (any DatabaseExecutor)? = nil
    ) async throws -> Bool {
        try await (executor ?? database).execute(
            "UPDATE notifications SET send_lease_expires_at = $3 WHERE id = $1 AND send_owner = $2",
            [SQLValue(id), .text(ownership.owner), SQLValue(ownership.until)]
        ) > 0
    }

    /// Gives up `owner`'s claim (the pass ended with tokens left for a later attempt).
    func releaseSend(_ id: UUID, owner: String) async throws {
        _ = try await database.execute(
            "UPDATE notifications SET send_owner = NULL, send_lease_expires_at = NULL WHERE id = $1 AND send_owner = $2",
            [SQLValue(id), .text(owner)]
        )
    }

    /// The live claim on a notification's send at `now`, if a sender holds one.
    func liveSendClaim(_ id: UUID, at now: Date) async throws -> SendOwnership? {
        let row = try await database.queryFirst(
            "SELECT send_owner, send_lease_expires_at FROM notifications WHERE id = $1",
            [SQLValue(id)]
        )
        guard let row, let owner = try row.optionalString("send_owner"),
            let until = try row.optionalDate("send_lease_expires_at"), until >= now
        else { return nil }
        return SendOwnership(owner: owner, until: until)
    }

    /// Moves a notification to `status` when it is in one of `from`, ending any sender's claim;
    /// returns it as stored after the change, or `nil` when it was in another status (or does not
    /// exist).
    func transition(
        _ id: UUID,
        from: [NotificationStatus],
        to status: NotificationStatus,
        failureReason: String? = nil,
        at now: Date,
        on executor: (any DatabaseExecutor)? = nil,
        reportingFinish: Bool = true
    ) async throws -> StoredNotification? {
        // To a final status, the finish observer writes in the same transaction.
        if reportingFinish, let finishObserver, status.isFinal {
            return try await transitionReportingFinish(finishObserver, on: executor) { tx in
                try await transition(
                    id,
                    from: from,
                    to: status,
                    failureReason: failureReason,
                    at: now,
                    on: tx,
                    reportingFinish: false
                )
            }
        }
        let list = from.map { "'\($0.rawValue)'" }.joined(separator: ", ")
        let rows = try await (executor ?? database).query(
            """
            UPDATE notifications SET status = $2, failure_reason = $3, updated_at = $4, send_owner = NULL,
                send_lease_expires_at = NULL
            WHERE id = $1 AND status IN (\(list))
            RETURNING \(Self.columns)
            """,
            [SQLValue(id), .text(status.rawValue), SQLValue(failureReason), SQLValue(now)]
        )
        return try rows.first.map(Self.notification(from:))
    }

    /// Marks every token still without a final result `failed` with `reason`.
    func failUnfinished(_ id: UUID, reason: String, at now: Date) async throws -> Int {
        try await database.transaction { tx in
            try await Self.countUnfinished(as: .failed, of: id, on: tx)
            let unrecorded = try await recordUnrecordedPages(id, as: .failed, reason: reason, at: now, on: tx)
            return try await unrecorded
                + tx.execute(
                    """
                    UPDATE notification_deliveries SET status = 'failed', reason = $2, updated_at = $3
                    WHERE notification_id = $1 AND status IN ('pending', 'retrying')
                    """,
                    [SQLValue(id), .text(reason), SQLValue(now)]
                )
        }
    }

    // MARK: Retention

    /// Deletes up to `limit` finished notifications (done, failed, cancelled) last changed before
    /// `cutoff`, with their per-token results; returns how many notifications went.
    ///
    /// `created_at < cutoff` follows from `updated_at < cutoff` and lets the search stop at the
    /// cutoff (`notifications_status_created`): without it SQLite, before any ANALYZE, read and
    /// sorted every finished notification each time, even with none to delete.
    @discardableResult
    public func prune(finishedBefore cutoff: Date, limit: Int = 500) async throws -> Int {
        try await database.transaction { tx in
            let ids = try await tx.query(
                """
                SELECT id FROM notifications
                WHERE status IN ('done', 'failed', 'cancelled') AND updated_at < $1 AND created_at < $1
                ORDER BY updated_at, id LIMIT $2
                """,
                [SQLValue(cutoff), SQLValue(limit)]
            ).map { try $0.string("id") }
            guard !ids.isEmpty else { return 0 }
            let list = ids.indices.map { "$\($0 + 1)" }.joined(separator: ", ")
            let binds = ids.map { SQLValue.text($0) }
            try await tx.execute("DELETE FROM notification_deliveries WHERE notification_id IN (\(list))", binds)
            try await tx.execute("DELETE FROM notification_pages WHERE notification_id IN (\(list))", binds)
            return try await tx.execute("DELETE FROM notifications WHERE id IN (\(list))", binds)
        }
    }

    // MARK: Reading

    public func notification(id: UUID) async throws -> StoredNotification? {
        try await database.queryFirst(
            "SELECT \(Self.columns) FROM notifications WHERE id = $1",
            [SQLValue(id)]
        ).map(Self.notification(from:))
    }

    /// Tokens per status.
    public func counts(id: UUID) async throws -> DeliveryCounts {
        try await Self.counts(id: id, on: database)
    }

    /// The tokens that still need a send (`pending` or `retrying`) after ordinal `after`, in
    /// order, `limit` at a time: a send reads them a page at a time, whatever their number.
    func unfinished(id: UUID, after: Int = -1, limit: Int = 1_000) async throws -> [DeliveryResult] {
        try await database.query(Self.unfinishedStatement, [SQLValue(id), SQLValue(after), SQLValue(limit)])
            .map(Self.delivery(from:))
    }

    /// ``unfinished(id:after:limit:)``'s statement: `$1` the notification, `$2` the ordinal to
    /// read after, `$3` the limit. `notification_deliveries_unfinished` serves it in order; its
    /// `status IN (…)` is the index's own condition, word for word, as SQLite needs to use it.
    package static let unfinishedStatement = """
        SELECT token, ordinal, status, reason, apns_id, invalid_at, attempts, updated_at
        FROM notification_deliveries WHERE notification_id = $1 AND ordinal > $2
            AND status IN ('pending', 'retrying')
        ORDER BY ordinal LIMIT $3
        """

    /// Results in token order, `limit` at a time, after `cursor` (a previous page's
    /// ``Page/nextCursor``).
    public func deliveries(id: UUID, limit: Int, cursor: String?) async throws -> Page<DeliveryResult> {
        let after = cursor.flatMap { Int($0) } ?? -1
        let rows = try await database.query(
            """
            SELECT token, ordinal, status, reason, apns_id, invalid_at, attempts, updated_at
            FROM notification_deliveries WHERE notification_id = $1 AND ordinal > $2
            ORDER BY ordinal LIMIT $3
            """,
            [SQLValue(id), SQLValue(after), SQLValue(limit + 1)]
        )
        var items = try rows.map(Self.delivery(from:))
        var next: String?
        if items.count > limit {
            items.removeLast()
            next = items.last.map { String($0.ordinal) }
        }
        return Page(items: items, nextCursor: next)
    }

    // MARK: Rows

    package static func expirationValue(_ expiration: APNSExpiration) -> SQLValue {
        switch expiration {
        case .omitted: .null
        case .immediately: .integer(0)
        case .at(let date): .integer(EpochTime.seconds(date))
        }
    }

    static func notification(from row: SQLRow) throws -> StoredNotification {
        let expiration: APNSExpiration =
            switch try row.optionalInt("expiration") {
            case nil: .omitted
            case 0: .immediately
            case let seconds?: .at(Date(timeIntervalSince1970: TimeInterval(seconds)))
            }
        let pushTypeName = try row.string("push_type")
        guard let pushType = APNSPushType(headerValue: pushTypeName) else {
            throw DatabaseError(code: .typeMismatch, message: "notifications.push_type holds an unknown push type")
        }
        // Rows from before migration 8 have no kind: tokens, resolved when created.
        let kind = try row.optionalString("audience_kind").flatMap(AudienceKind.init(rawValue:))
        var notification = StoredNotification(
            id: try row.uuid("id"),
            app: try row.string("app"),
            environment: APNSEnvironment(rawValue: try row.string("environment")) ?? .production,
            pushType: pushType,
            topic: try row.string("topic"),
            priority: try row.optionalInt("priority").flatMap { APNSPriority(rawValue: Int($0)) },
            expiration: expiration,
            collapseID: try row.optionalString("collapse_id"),
            payload: try row.string("payload"),
            sendAt: try row.date("send_at"),
            status: NotificationStatus(rawValue: try row.string("status")) ?? .failed,
            tokenCount: Int(try row.int("token_count")),
            failureReason: try row.optionalString("failure_reason"),
            jobID: try row.optionalUUID("job_id"),
            createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at")
        )
        notification.audienceKind = kind ?? .tokens
        notification.audienceResolvedAt = try row.optionalDate("audience_resolved_at")
        if kind == nil { notification.audienceResolvedAt = notification.createdAt }
        return notification
    }

    static func delivery(from row: SQLRow) throws -> DeliveryResult {
        DeliveryResult(
            token: try row.string("token"),
            ordinal: Int(try row.int("ordinal")),
            status: DeliveryStatus(rawValue: try row.string("status")) ?? .pending,
            reason: try row.optionalString("reason"),
            apnsID: try row.optionalString("apns_id"),
            invalidAt: try row.optionalDate("invalid_at"),
            attempts: Int(try row.int("attempts")),
            updatedAt: try row.date("updated_at")
        )
    }
}
