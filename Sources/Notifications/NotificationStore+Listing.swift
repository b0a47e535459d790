public import Foundation
public import HeraldCore
package import Storage

/// Which notifications `GET /v1/notifications` lists: every filter is optional.
public struct NotificationListQuery: Sendable, Hashable {
    public var status: NotificationStatus?
    /// The app's bundle ID.
    public var app: String?
    /// Created strictly after this time.
    public var createdAfter: Date?
    /// Created strictly before this time.
    public var createdBefore: Date?
    public var limit: Int
    /// Where the previous page ended (its ``Page/nextCursor``).
    public var cursor: NotificationCursor?

    public init(
        status: NotificationStatus? = nil,
        app: String? = nil,
        createdAfter: Date? = nil,
        createdBefore: Date? = nil,
        limit: Int = 100,
        cursor: NotificationCursor? = nil
    ) {
        self.status = status
        self.app = app
        self.createdAfter = createdAfter
        self.createdBefore = createdBefore
        self.limit = limit
        self.cursor = cursor
    }
}

/// Where a page of notifications ends: `<created_at ms>:<id>`, the last row's sort key.
public struct NotificationCursor: Sendable, Hashable {
    var createdAt: Int64
    var id: String

    init(_ notification: StoredNotification) {
        createdAt = EpochTime.milliseconds(notification.createdAt)
        id = RequestIdentifier.lowercaseString(notification.id)
    }

    /// Parses a cursor a previous page returned; `nil` when it is not one.
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let at = Int64(parts[0]), let id = RequestIdentifier.uuid(parts[1]) else {
            return nil
        }
        createdAt = at
        self.id = RequestIdentifier.lowercaseString(id)
    }

    var text: String { "\(createdAt):\(id)" }
}

extension NotificationStore {
    /// Notifications newest first (by creation, then id), `query.limit` at a time. Each filter
    /// and the keyset condition on `(created_at, id)` are served by the indexes of migration 6
    /// (`notifications_created`, `notifications_status_created`, `notifications_app_created`),
    /// so a page costs the same at any depth.
    public func list(_ query: NotificationListQuery) async throws -> Page<StoredNotification> {
        let (sql, binds) = Self.listStatement(query)
        var items = try await database.query(sql, binds).map(Self.notification(from:))
        var next: String?
        if items.count > query.limit {
            items.removeLast()
            next = items.last.map { NotificationCursor($0).text }
        }
        return Page(items: items, nextCursor: next)
    }

    /// The `SELECT` of ``list(_:)`` with its binds (one row more than the page, to know whether
    /// another page follows).
    package static func listStatement(_ query: NotificationListQuery) -> (sql: String, binds: [SQLValue]) {
        var conditions: [String] = []
        var binds: [SQLValue] = []
        func bind(_ value: SQLValue) -> String {
            binds.append(value)
            return "$\(binds.count)"
        }
        if let status = query.status { conditions.append("status = \(bind(.text(status.rawValue)))") }
        if let app = query.app { conditions.append("app = \(bind(.text(app)))") }
        if let after = query.createdAfter { conditions.append("created_at > \(bind(SQLValue(after)))") }
        if let before = query.createdBefore { conditions.append("created_at < \(bind(SQLValue(before)))") }
        if let cursor = query.cursor {
            conditions.append(
                "(created_at, id) < (\(bind(.integer(cursor.createdAt))), \(bind(.text(cursor.id))))"
            )
        }
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let sql = """
            SELECT \(columns) FROM notifications \(whereClause)
            ORDER BY created_at DESC, id DESC LIMIT \(bind(SQLValue(query.limit + 1)))
            """
        return (sql, binds)
    }

    /// Marks every token without a final result (`pending`, `retrying`) `cancelled`, inside the
    /// caller's transaction; returns how many.
    func cancelUnfinished(_ id: UUID, at now: Date, on executor: any DatabaseExecutor) async throws -> Int {
        let reason = "the notification was cancelled"
        try await Self.countUnfinished(as: .cancelled, of: id, on: executor)
        let unrecorded = try await recordUnrecordedPages(id, as: .cancelled, reason: reason, at: now, on: executor)
        return try await unrecorded
            + executor.execute(
                """
                UPDATE notification_deliveries SET status = 'cancelled', reason = $3, updated_at = $2
                WHERE notification_id = $1 AND status IN ('pending', 'retrying')
                """,
                [SQLValue(id), SQLValue(now), .text(reason)]
            )
    }

    /// Forgets the notification's send job (deleted by the caller in the same transaction).
    func clearJob(_ id: UUID, on executor: any DatabaseExecutor) async throws {
        try await executor.execute("UPDATE notifications SET job_id = NULL WHERE id = $1", [SQLValue(id)])
    }
}
