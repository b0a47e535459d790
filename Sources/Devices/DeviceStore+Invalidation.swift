public import APNs
public import Foundation
public import HeraldCore
public import Storage

extension DeviceStore {
    /// Records APNs' answers that tokens of one app and environment are dead, inside the caller's
    /// transaction (the sender's result write).
    ///
    /// A device is marked invalid at the answer's ``DeviceInvalidation/invalidAt`` unless it
    /// registered after that time; a token never registered becomes an invalid device, so that
    /// `/v1/dead-tokens` lists it. Devices that moved to invalid are reported to ``events`` in
    /// the same transaction.
    ///
    /// - Returns: the devices that became invalid (not those already invalid).
    @discardableResult
    public func invalidate(
        _ invalidations: [DeviceInvalidation],
        app: String,
        environment: APNSEnvironment,
        on executor: any DatabaseExecutor
    ) async throws -> [DeviceInvalidatedEvent] {
        // One statement must not touch a row twice: the latest answer per token wins.
        var latest: [String: DeviceInvalidation] = [:]
        for invalidation in invalidations {
            if let known = latest[invalidation.token], known.invalidAt > invalidation.invalidAt { continue }
            latest[invalidation.token] = invalidation
        }
        let unique = latest.values.sorted { $0.token < $1.token }
        var events: [DeviceInvalidatedEvent] = []
        var start = 0
        while start < unique.count {
            let end = min(start + Self.batchSize(executor.dialect), unique.count)
            events += try await invalidateBatch(
                Array(unique[start..<end]),
                group: GroupKey(app: app, environment: environment),
                on: executor
            )
            start = end
        }
        if !events.isEmpty, let sink = self.events { try await sink.devicesInvalidated(events, on: executor) }
        for event in events { metrics.invalidations.increment(labels: [("reason", event.reason)]) }
        return events
    }

    /// Marks the tags of `tokens` inactive: tag audiences read only the tags of active devices.
    ///
    /// By `device_tags_token`: with `active = 1` in the condition too, SQLite before any ANALYZE
    /// searched the key by app and environment alone, reading every tag of the app.
    func deactivateTags(of tokens: [String], in group: GroupKey, on executor: any DatabaseExecutor) async throws {
        guard !tokens.isEmpty else { return }
        var binds = SQLBinds()
        _ = binds.add(.text(group.app))
        _ = binds.add(.text(group.environment.rawValue))
        let list = tokens.map { binds.add(.text($0)) }.joined(separator: ", ")
        try await executor.execute(
            "UPDATE device_tags SET active = 0 WHERE app = $1 AND environment = $2 AND token IN (\(list))",
            binds.values
        )
    }

    private func invalidateBatch(
        _ batch: [DeviceInvalidation],
        group: GroupKey,
        on executor: any DatabaseExecutor
    ) async throws -> [DeviceInvalidatedEvent] {
        var binds = SQLBinds()
        _ = binds.add(.text(group.app))
        _ = binds.add(.text(group.environment.rawValue))
        let list = batch.map { binds.add(.text($0.token)) }.joined(separator: ", ")
        let lock = executor.dialect == .postgres ? " FOR UPDATE" : ""
        let alreadyInvalid = Set(
            try await executor.query(
                "SELECT token FROM devices WHERE app = $1 AND environment = $2 AND status = 'invalid' "
                    + "AND token IN (\(list))" + lock,
                binds.values
            ).map { try $0.string("token") }
        )

        binds = SQLBinds()
        _ = binds.add(.text(group.app))
        _ = binds.add(.text(group.environment.rawValue))
        let rows = batch.map { item in
            let token = binds.add(.text(item.token))
            let reason = binds.add(.text(item.reason))
            let at = binds.add(SQLValue(item.invalidAt))
            let recorded = binds.add(SQLValue(item.recordedAt))
            let notification = binds.add(SQLValue(item.notificationID))
            return "($1, $2, \(token), '[]', 'invalid', \(reason), \(at), \(recorded), \(notification), "
                + "\(recorded), \(recorded))"
        }
        // A device registered after the answer's time stays as it is (the WHERE of the update).
        let changed = try await executor.query(
            """
            INSERT INTO devices (app, environment, token, tags, status, invalid_reason, invalid_at,
                invalid_recorded_at, invalid_notification_id, created_at, updated_at)
            VALUES \(rows.joined(separator: ", "))
            ON CONFLICT (app, environment, token) DO UPDATE SET status = 'invalid',
                invalid_reason = excluded.invalid_reason, invalid_at = excluded.invalid_at,
                invalid_recorded_at = excluded.invalid_recorded_at,
                invalid_notification_id = excluded.invalid_notification_id, updated_at = excluded.updated_at
            WHERE devices.last_registered_at IS NULL OR excluded.invalid_at >= devices.last_registered_at
            RETURNING token, invalid_reason, invalid_at
            """,
            binds.values
        )
        if !changed.isEmpty {
            try await deactivateTags(of: try changed.map { try $0.string("token") }, in: group, on: executor)
        }
        return try changed.compactMap { row in
            let token = try row.string("token")
            guard !alreadyInvalid.contains(token) else { return nil }
            return DeviceInvalidatedEvent(
                token: token,
                app: group.app,
                environment: group.environment,
                reason: try row.string("invalid_reason"),
                invalidAt: try row.date("invalid_at")
            )
        }
    }

    // MARK: Dead tokens

    /// Invalid devices recorded at or after `since`, oldest record first, `limit` at a time: what
    /// `GET /v1/dead-tokens` lists.
    public func deadTokens(
        app: String?,
        environment: APNSEnvironment?,
        since: Date?,
        limit: Int,
        cursor: DeadTokenCursor?
    ) async throws -> Page<DeadToken> {
        var conditions = ["status = 'invalid'", "invalid_recorded_at IS NOT NULL"]
        var binds = SQLBinds()
        if let app { conditions.append("app = \(binds.add(.text(app)))") }
        if let environment { conditions.append("environment = \(binds.add(.text(environment.rawValue)))") }
        if let since { conditions.append("invalid_recorded_at >= \(binds.add(SQLValue(since)))") }
        if let cursor {
            let at = binds.add(.integer(cursor.recordedAt))
            let app = binds.add(.text(cursor.app))
            let environment = binds.add(.text(cursor.environment))
            let token = binds.add(.text(cursor.token))
            conditions.append(
                "(invalid_recorded_at > \(at) OR (invalid_recorded_at = \(at) AND (app > \(app) OR (app = \(app) AND "
                    + "(environment > \(environment) OR (environment = \(environment) AND token > \(token)))))))"
            )
        }
        let rows = try await database.query(
            """
            SELECT app, environment, token, invalid_reason, invalid_at, invalid_recorded_at, invalid_notification_id
            FROM devices WHERE \(conditions.joined(separator: " AND "))
            ORDER BY invalid_recorded_at, app, environment, token LIMIT \(binds.add(SQLValue(limit + 1)))
            """,
            binds.values
        )
        var items = try rows.map { row in
            DeadToken(
                app: try row.string("app"),
                environment: APNSEnvironment(rawValue: try row.string("environment")) ?? .production,
                token: try row.string("token"),
                reason: try row.optionalString("invalid_reason") ?? "Unregistered",
                invalidAt: try row.optionalDate("invalid_at"),
                recordedAt: try row.date("invalid_recorded_at"),
                notificationID: try row.optionalUUID("invalid_notification_id")
            )
        }
        var next: String?
        if items.count > limit {
            items.removeLast()
            next = items.last.map { DeadTokenCursor($0).text }
        }
        return Page(items: items, nextCursor: next)
    }

    // MARK: Retention

    /// Deletes up to `limit` devices invalid since before `cutoff` (by when Herald recorded it),
    /// with their tags; returns how many went.
    @discardableResult
    public func prune(invalidBefore cutoff: Date, limit: Int = 1_000) async throws -> Int {
        try await database.transaction { tx in
            let selection = """
                SELECT app, environment, token FROM devices
                WHERE status = 'invalid' AND invalid_recorded_at < $1
                ORDER BY invalid_recorded_at, app, environment, token LIMIT $2
                """
            let binds: [SQLValue] = [SQLValue(cutoff), SQLValue(limit)]
            try await tx.execute(
                "DELETE FROM device_tags WHERE (app, environment, token) IN (\(selection))",
                binds
            )
            return try await tx.execute(
                "DELETE FROM devices WHERE (app, environment, token) IN (\(selection))",
                binds
            )
        }
    }
}

/// A device token APNs said is dead, kept for pruning the app's own token list.
public struct DeadToken: Sendable, Hashable {
    public var app: String
    public var environment: APNSEnvironment
    public var token: String
    public var reason: String
    /// APNs' 410 timestamp when it gave one, else the time of its answer.
    public var invalidAt: Date?
    /// When Herald recorded it.
    public var recordedAt: Date
    /// The notification whose send found it.
    public var notificationID: UUID?

    public init(
        app: String,
        environment: APNSEnvironment,
        token: String,
        reason: String,
        invalidAt: Date?,
        recordedAt: Date,
        notificationID: UUID?
    ) {
        self.app = app
        self.environment = environment
        self.token = token
        self.reason = reason
        self.invalidAt = invalidAt
        self.recordedAt = recordedAt
        self.notificationID = notificationID
    }
}

/// Where a page of dead tokens ends: `<recorded_at ms>:<app>:<environment>:<token>`.
public struct DeadTokenCursor: Sendable, Hashable {
    var recordedAt: Int64
    var app: String
    var environment: String
    var token: String

    init(_ token: DeadToken) {
        recordedAt = EpochTime.milliseconds(token.recordedAt)
        app = token.app
        environment = token.environment.rawValue
        self.token = token.token
    }

    /// Parses a cursor a previous page returned; `nil` when it is not one.
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 4, let at = Int64(parts[0]) else { return nil }
        recordedAt = at
        app = String(parts[1])
        environment = String(parts[2])
        token = String(parts[3])
    }

    public var text: String { "\(recordedAt):\(app):\(environment):\(token)" }
}
