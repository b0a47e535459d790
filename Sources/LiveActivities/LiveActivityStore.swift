import APNs
public import Foundation
import HeraldCore
public import Storage

/// The Live Activities tables (migrations 11 and 12), with the same SQL on SQLite and PostgreSQL:
/// activities and their users here, push-to-start tokens in `+Tokens`, instances and deliveries in
/// `+Instances`.
public struct LiveActivityStore: Sendable {
    public let database: any Database

    public init(database: any Database) {
        self.database = database
    }

    static let columns = """
        id, app, environment, attributes_type, request, request_hash, state, failure_reason, channel_id, \
        channel_created, content_state, last_update, last_timestamp, start_at, end_at, started_at, ended_at, \
        created_at, updated_at
        """

    // MARK: Writing

    /// Inserts a new activity and its users inside the caller's transaction.
    ///
    /// - Returns: `false` when an activity with the id exists already (nothing written).
    func insert(_ activity: LiveActivity, on executor: any DatabaseExecutor) async throws -> Bool {
        let inserted = try await executor.execute(
            """
            INSERT INTO live_activities (\(Self.columns))
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
            ON CONFLICT (id) DO NOTHING
            """,
            [
                .text(LiveActivityID.text(activity.id)), .text(activity.app), .text(activity.environment.rawValue),
                .text(activity.attributesType), .text(try Self.json(activity.request)), .text(activity.requestHash),
                .text(activity.state.rawValue), SQLValue(activity.failureReason), SQLValue(activity.channelID),
                .bool(activity.channelCreated), .text(try Self.text(activity.contentState)),
                SQLValue(try activity.lastUpdate.map(Self.json)), .integer(activity.lastTimestamp),
                SQLValue(activity.startAt), SQLValue(activity.endAt), SQLValue(activity.startedAt),
                SQLValue(activity.endedAt), SQLValue(activity.createdAt), SQLValue(activity.updatedAt),
            ]
        )
        guard inserted > 0 else { return false }
        if case .create(let policy)? = activity.request.channel, policy == 1, activity.channelCreated {
            try await executor.execute(
                "UPDATE live_activities SET channel_storage_policy = 1 WHERE id = $1",
                [.text(LiveActivityID.text(activity.id))]
            )
        }
        // Many rows a statement: an activity the app starts for tags or everyone may have
        // thousands of users.
        let users = Set(activity.users).sorted()
        for start in stride(from: 0, to: users.count, by: Self.rowsPerStatement) {
            let chunk = users[start..<min(start + Self.rowsPerStatement, users.count)]
            var binds: [SQLValue] = [.text(LiveActivityID.text(activity.id))]
            let rows = chunk.map { user -> String in
                binds.append(.text(user))
                return "($\(binds.count), $1)"
            }
            try await executor.execute(
                "INSERT INTO live_activity_users (user_id, live_activity_id) VALUES \(rows.joined(separator: ", ")) "
                    + "ON CONFLICT DO NOTHING",
                binds
            )
        }
        return true
    }

    /// Records as users of an activity the users its push-to-start tokens are registered to, in
    /// the transaction that starts it, before any push-to-start leaves: an instance reported by a
    /// device that received one finds its user recorded. One insert-select per 500 tokens, so an
    /// `all` audience costs a few statements, not one per user.
    func addUsers(
        ofPushToStartTokens tokens: [String],
        of activity: LiveActivity,
        on executor: any DatabaseExecutor
    ) async throws {
        var start = 0
        while start < tokens.count {
            let chunk = tokens[start..<min(start + 500, tokens.count)]
            var binds: [SQLValue] = [
                .text(LiveActivityID.text(activity.id)), .text(activity.app), .text(activity.environment.rawValue),
                .text(activity.attributesType),
            ]
            let wanted = chunk.map { token -> String in
                binds.append(.text(token))
                return "($\(binds.count))"
            }.joined(separator: ", ")
            // A join on the whole key: as `token IN (…)` beside `user_id IS NOT NULL`, SQLite before
            // any ANALYZE read every token of the type through `push_to_start_tokens_user`.
            try await executor.execute(
                """
                WITH wanted (token) AS (VALUES \(wanted))
                INSERT INTO live_activity_users (user_id, live_activity_id)
                SELECT DISTINCT t.user_id, CAST($1 AS TEXT) FROM wanted JOIN push_to_start_tokens t
                    ON t.app = $2 AND t.environment = $3 AND t.attributes_type = $4 AND t.token = wanted.token
                WHERE t.user_id IS NOT NULL
                ON CONFLICT DO NOTHING
                """,
                binds
            )
            start += 500
        }
    }

    /// Whether `userID` is one of the users of the activity (``addUsers(ofPushToStartTokens:of:on:)``).
    func isUser(_ userID: String, of id: UUID, on executor: any DatabaseExecutor) async throws -> Bool {
        try await executor.queryFirst(
            "SELECT user_id FROM live_activity_users WHERE user_id = $1 AND live_activity_id = $2",
            [.text(userID), .text(LiveActivityID.text(id))]
        ) != nil
    }

    /// Marks a scheduled activity as being started (its push-to-starts about to go out), or clears
    /// the mark (`starting: false`: APNs took none, the job tries again later). While marked it
    /// cannot be cancelled. `false` when the activity is not scheduled (cancelled meanwhile).
    func markStarting(_ id: UUID, _ starting: Bool, on executor: any DatabaseExecutor) async throws -> Bool {
        try await executor.execute(
            "UPDATE live_activities SET starting = $1 WHERE id = $2 AND state = $3",
            [.integer(starting ? 1 : 0), .text(LiveActivityID.text(id)), .text(LiveActivityState.scheduled.rawValue)]
        ) > 0
    }

    /// Cancels a scheduled activity whose start is not being sent; `false` otherwise.
    func cancel(_ id: UUID, at now: Date, on executor: any DatabaseExecutor) async throws -> Bool {
        try await executor.execute(
            "UPDATE live_activities SET state = $1, updated_at = $2 WHERE id = $3 AND state = $4 AND starting = 0",
            [
                .text(LiveActivityState.cancelled.rawValue), SQLValue(now), .text(LiveActivityID.text(id)),
                .text(LiveActivityState.scheduled.rawValue),
            ]
        ) > 0
    }

    /// Moves an activity from one of `from` to `to`, stamping `started_at`/`ended_at` as the state
    /// says; `false` when it was in none of them (another instance or request moved it first).
    func transition(
        _ id: UUID,
        from: [LiveActivityState],
        to: LiveActivityState,
        at now: Date,
        reason: String? = nil,
        on executor: any DatabaseExecutor
    ) async throws -> Bool {
        var binds: [SQLValue] = [.text(to.rawValue), SQLValue(now), SQLValue(reason), .text(LiveActivityID.text(id))]
        let states = from.map { state -> String in
            binds.append(.text(state.rawValue))
            return "$\(binds.count)"
        }
        let stamp =
            switch to {
            case .started: ", started_at = $2"
            case .ended, .expired: ", ended_at = $2"
            default: ""
            }
        return try await executor.execute(
            "UPDATE live_activities SET state = $1, updated_at = $2, failure_reason = COALESCE($3, failure_reason)"
                + stamp + " WHERE id = $4 AND state IN (\(states.joined(separator: ", ")))",
            binds
        ) > 0
    }

    /// Takes the next timestamp for a start push: now, or one after the latest, in one statement,
    /// so that an update accepted meanwhile (a start sent again to a token APNs did not take while
    /// the activity runs) never shares or undercuts it.
    func stampStart(_ id: UUID, now: Date, on executor: any DatabaseExecutor) async throws -> Int64 {
        let greatest = executor.dialect == .postgres ? "GREATEST" : "MAX"
        guard
            let row = try await executor.queryFirst(
                "UPDATE live_activities SET last_timestamp = \(greatest)(last_timestamp + 1, CAST($1 AS BIGINT)) "
                    + "WHERE id = $2 RETURNING last_timestamp",
                [.integer(EpochTime.seconds(now)), .text(LiveActivityID.text(id))]
            )
        else { throw LiveActivityError.notFound }
        return try row.int("last_timestamp")
    }

    // MARK: Reading

    public func activity(_ id: UUID) async throws -> LiveActivity? {
        try await activity(id, on: database)
    }

    func activity(_ id: UUID, on executor: any DatabaseExecutor) async throws -> LiveActivity? {
        guard
            let row = try await executor.queryFirst(
                "SELECT \(Self.columns) FROM live_activities WHERE id = $1",
                [.text(LiveActivityID.text(id))]
            )
        else { return nil }
        return try await decode(row, on: executor)
    }

    /// The activity, its row locked until the transaction ends (PostgreSQL; SQLite's writer lock
    /// already serialises), so timestamps and state changes of one activity never interleave.
    func lockedActivity(_ id: UUID, on executor: any DatabaseExecutor) async throws -> LiveActivity? {
        if executor.dialect == .sqlite {
            // Takes the write lock now rather than at the first write.
            try await executor.execute(
                "UPDATE live_activities SET updated_at = updated_at WHERE id = $1",
                [.text(LiveActivityID.text(id))]
            )
            return try await activity(id, on: executor)
        }
        guard
            let row = try await executor.queryFirst(
                "SELECT \(Self.columns) FROM live_activities WHERE id = $1 FOR UPDATE",
                [.text(LiveActivityID.text(id))]
            )
        else { return nil }
        return try await decode(row, on: executor)
    }

    /// The filter of ``list(_:limit:cursor:)``.
    public struct Filter: Sendable, Hashable {
        public var userID: String?
        public var state: LiveActivityState?
        public var attributesType: String?

        public init(userID: String? = nil, state: LiveActivityState? = nil, attributesType: String? = nil) {
            self.userID = userID
            self.state = state
            self.attributesType = attributesType
        }
    }

    /// Activities newest first, `limit` at a time; the cursor is `<created_at ms>:<id>` of the
    /// last one of the previous page.
    public func list(
        _ filter: Filter,
        limit: Int,
        cursor: String?
    ) async throws -> (items: [LiveActivity], next: String?) {
        var conditions: [String] = []
        var binds: [SQLValue] = []
        func bind(_ value: SQLValue) -> String {
            binds.append(value)
            return "$\(binds.count)"
        }
        if let user = filter.userID {
            conditions.append(
                "id IN (SELECT live_activity_id FROM live_activity_users WHERE user_id = \(bind(.text(user))))"
            )
        }
        if let state = filter.state { conditions.append("state = \(bind(.text(state.rawValue)))") }
        if let type = filter.attributesType { conditions.append("attributes_type = \(bind(.text(type)))") }
        if let cursor {
            let parts = cursor.split(separator: ":", maxSplits: 1)
            if parts.count == 2, let at = Int64(parts[0]) {
                let atBind = bind(.integer(at))
                let idBind = bind(.text(String(parts[1])))
                conditions.append("(created_at < \(atBind) OR (created_at = \(atBind) AND id < \(idBind)))")
            }
        }
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let rows = try await database.query(
            "SELECT \(Self.columns) FROM live_activities \(whereClause) ORDER BY created_at DESC, id DESC "
                + "LIMIT \(bind(.integer(Int64(limit + 1))))",
            binds
        )
        // One query for the users of the whole page, not one per activity.
        let page = Array(rows.prefix(limit))
        let users = try await users(of: try page.map { try $0.uuid("id") }, on: database)
        let items = try page.map { row in try Self.decode(row, users: users[try row.uuid("id")] ?? []) }
        let next =
            rows.count > limit
            ? items.last.map { "\(EpochTime.milliseconds($0.createdAt)):\(LiveActivityID.text($0.id))" } : nil
        return (items, next)
    }

    // MARK: Rows

    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    private func decode(_ row: SQLRow, on executor: any DatabaseExecutor) async throws -> LiveActivity {
        let id = try row.uuid("id")
        return try Self.decode(row, users: try await users(of: [id], on: executor)[id] ?? [])
    }

    /// The users of each of `ids`, each list sorted, in one query.
    private func users(of ids: [UUID], on executor: any DatabaseExecutor) async throws -> [UUID: [String]] {
        guard !ids.isEmpty else { return [:] }
        let placeholders = ids.indices.map { "$\($0 + 1)" }.joined(separator: ", ")
        let rows = try await executor.query(
            "SELECT live_activity_id, user_id FROM live_activity_users WHERE live_activity_id IN (\(placeholders)) "
                + "ORDER BY live_activity_id, user_id",
            ids.map { .text(LiveActivityID.text($0)) }
        )
        var users: [UUID: [String]] = [:]
        for row in rows { users[try row.uuid("live_activity_id"), default: []].append(try row.string("user_id")) }
        return users
    }

    static func decode(_ row: SQLRow, users: [String]) throws -> LiveActivity {
        LiveActivity(
            id: try row.uuid("id"),
            app: try row.string("app"),
            environment: APNSEnvironment(rawValue: try row.string("environment")) ?? .production,
            attributesType: try row.string("attributes_type"),
            // Nesting as deep as Foundation's decoder allowed when these rows were read with it.
            request: try LiveActivityRequest(json: try JSONValue.parse(Array(try row.string("request").utf8))),
            requestHash: try row.string("request_hash"),
            state: LiveActivityState(rawValue: try row.string("state")) ?? .failed,
            failureReason: try row.optionalString("failure_reason"),
            channelID: try row.optionalString("channel_id"),
            channelCreated: try row.bool("channel_created"),
            contentState: try Self.value(try row.string("content_state")),
            lastUpdate: try row.optionalString("last_update").map { try LiveActivityUpdate(json: try Self.value($0)) },
            lastTimestamp: try row.int("last_timestamp"),
            startAt: try row.optionalDate("start_at"),
            endAt: try row.optionalDate("end_at"),
            startedAt: try row.optionalDate("started_at"),
            endedAt: try row.optionalDate("ended_at"),
            createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at"),
            users: users
        )
    }
}
