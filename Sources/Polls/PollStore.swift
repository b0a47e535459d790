import APNs
public import Foundation
import HeraldCore
public import Storage

/// The Polls tables, with the same SQL on SQLite and PostgreSQL.
public struct PollStore: Sendable {
    public let database: any Database

    public init(database: any Database) {
        self.database = database
    }

    static let columns = """
        id, app, environment, question, options, host_user_id, closes_at, live_activity_id, content_state, \
        created_at, finalized_at
        """

    /// Inserts a poll and its members inside the caller's transaction.
    func insert(_ poll: Poll, on executor: any DatabaseExecutor) async throws {
        try await executor.execute(
            """
            INSERT INTO polls (\(Self.columns), updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $10)
            """,
            [
                SQLValue(poll.id), .text(poll.app), .text(poll.environment.rawValue), .text(poll.question),
                .text(JSONValue.array(poll.options.map(JSONValue.string)).text),
                SQLValue(poll.hostUserID), SQLValue(poll.closesAt), SQLValue(poll.liveActivityID),
                SQLValue(poll.contentState?.text), SQLValue(poll.createdAt), SQLValue(poll.finalizedAt),
            ]
        )
        for start in stride(from: 0, to: poll.members.count, by: 100) {
            var binds: [SQLValue] = [SQLValue(poll.id)]
            var rows: [String] = []
            for index in start..<min(start + 100, poll.members.count) {
                let member = poll.members[index]
                binds += [.text(member.userID), .integer(Int64(index)), .text(member.name)]
                let base = binds.count
                rows.append("($1, $\(base - 2), $\(base - 1), $\(base))")
            }
            try await executor.execute(
                "INSERT INTO poll_members (poll_id, user_id, position, name) VALUES \(rows.joined(separator: ", "))",
                binds
            )
        }
    }

    /// The open polls `userID` is a member of (of `app` when given), soonest closing first, then
    /// oldest; at most `limit`.
    func open(userID: String, app: String?, limit: Int) async throws -> [Poll] {
        var binds: [SQLValue] = [.text(userID)]
        var appFilter = ""
        if let app {
            binds.append(.text(app))
            appFilter = " AND p.app = $2"
        }
        binds.append(.integer(Int64(limit)))
        let rows = try await database.query(
            """
            SELECT p.id FROM polls p JOIN poll_members m ON m.poll_id = p.id
            WHERE m.user_id = $1 AND p.finalized_at IS NULL\(appFilter)
            ORDER BY CASE WHEN p.closes_at IS NULL THEN 1 ELSE 0 END, p.closes_at, p.created_at, p.id
            LIMIT $\(binds.count)
            """,
            binds
        )
        var polls: [Poll] = []
        for row in rows {
            if let id = UUID(uuidString: try row.string("id")), let poll = try await poll(id) { polls.append(poll) }
        }
        return polls
    }

    /// The poll with its members, or `nil`.
    public func poll(_ id: UUID, on executor: (any DatabaseExecutor)? = nil) async throws -> Poll? {
        let executor = executor ?? database
        guard let row = try await executor.queryFirst("SELECT \(Self.columns) FROM polls WHERE id = $1", [SQLValue(id)])
        else { return nil }
        return try await decode(row, on: executor)
    }

    /// The poll, its row locked until the caller's transaction ends: votes and finalizes of one
    /// poll run one after the other, on one instance or several sharing PostgreSQL.
    func lockedPoll(_ id: UUID, on executor: any DatabaseExecutor) async throws -> Poll? {
        if executor.dialect == .sqlite {
            // Takes the write lock now rather than at the first write.
            try await executor.execute("UPDATE polls SET updated_at = updated_at WHERE id = $1", [SQLValue(id)])
            return try await poll(id, on: executor)
        }
        guard
            let row = try await executor.queryFirst(
                "SELECT \(Self.columns) FROM polls WHERE id = $1 FOR UPDATE",
                [SQLValue(id)]
            )
        else { return nil }
        return try await decode(row, on: executor)
    }

    /// Records `userID`'s vote (replacing an earlier one).
    func vote(_ id: UUID, userID: String, option: String, at now: Date, on executor: any DatabaseExecutor) async throws
    {
        try await executor.execute(
            "UPDATE poll_members SET option = $1, voted_at = $2 WHERE poll_id = $3 AND user_id = $4",
            [.text(option), SQLValue(now), SQLValue(id), .text(userID)]
        )
    }

    /// Marks the poll final unless it is already: `true` for the one call that did.
    func finalize(_ id: UUID, at now: Date, on executor: any DatabaseExecutor) async throws -> Bool {
        try await executor.execute(
            "UPDATE polls SET finalized_at = $1, updated_at = $1 WHERE id = $2 AND finalized_at IS NULL",
            [SQLValue(now), SQLValue(id)]
        ) == 1
    }

    /// Polls newest first, `limit` at a time, after `cursor` (`<created_at ms>:<id>`).
    public func list(app: String?, limit: Int, cursor: String?) async throws -> (items: [Poll], next: String?) {
        var conditions: [String] = []
        var binds: [SQLValue] = []
        if let app {
            binds.append(.text(app))
            conditions.append("app = $\(binds.count)")
        }
        if let cursor {
            let parts = cursor.split(separator: ":", maxSplits: 1)
            if parts.count == 2, let at = Int64(parts[0]) {
                binds += [.integer(at), .text(String(parts[1]))]
                let (atBind, idBind) = ("$\(binds.count - 1)", "$\(binds.count)")
                conditions.append("(created_at < \(atBind) OR (created_at = \(atBind) AND id < \(idBind)))")
            }
        }
        binds.append(.integer(Int64(limit + 1)))
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let rows = try await database.query(
            "SELECT \(Self.columns) FROM polls \(whereClause) ORDER BY created_at DESC, id DESC LIMIT $\(binds.count)",
            binds
        )
        var items: [Poll] = []
        for row in rows.prefix(limit) { items.append(try await decode(row, on: database)) }
        let next =
            rows.count > limit
            ? items.last.map { "\(EpochTime.milliseconds($0.createdAt)):\(RequestIdentifier.lowercaseString($0.id))" }
            : nil
        return (items, next)
    }

    /// Deletes the polls final before `cutoff`, with their members; how many.
    func deleteFinal(before cutoff: Date) async throws -> Int {
        try await database.transaction { tx in
            try await tx.execute(
                """
                DELETE FROM poll_members WHERE poll_id IN
                    (SELECT id FROM polls WHERE finalized_at IS NOT NULL AND finalized_at < $1)
                """,
                [SQLValue(cutoff)]
            )
            return try await tx.execute(
                "DELETE FROM polls WHERE finalized_at IS NOT NULL AND finalized_at < $1",
                [SQLValue(cutoff)]
            )
        }
    }

    private func decode(_ row: SQLRow, on executor: any DatabaseExecutor) async throws -> Poll {
        let id = try row.uuid("id")
        let members = try await executor.query(
            "SELECT user_id, name, option FROM poll_members WHERE poll_id = $1 ORDER BY position",
            [SQLValue(id)]
        ).map { row in
            PollMember(
                userID: try row.string("user_id"),
                name: try row.string("name"),
                option: try row.optionalString("option")
            )
        }
        var options: [String] = []
        if case .array(let items) = try JSONValue.parse(Array(try row.string("options").utf8)) {
            options = items.compactMap(\.stringValue)
        }
        return Poll(
            id: id,
            app: try row.string("app"),
            environment: APNSEnvironment(rawValue: try row.string("environment")) ?? .production,
            question: try row.string("question"),
            options: options,
            members: members,
            hostUserID: try row.optionalString("host_user_id"),
            closesAt: try row.optionalDate("closes_at"),
            liveActivityID: try row.optionalUUID("live_activity_id"),
            contentState: try row.optionalString("content_state").map { try JSONValue.parse(Array($0.utf8)) },
            createdAt: try row.date("created_at"),
            finalizedAt: try row.optionalDate("finalized_at")
        )
    }
}

extension JSONValue {
    /// The value as compact JSON text.
    var text: String {
        (try? encodedPayload()).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }
}
