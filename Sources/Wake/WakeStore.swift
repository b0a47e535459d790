import APNs
import Audiences
import Devices
public import Foundation
import HeraldCore
import Jobs
public import Storage

/// The `wake_schedules`, `wake_runs` and `wake_pings` tables.
public struct WakeStore: Sendable {
    public let database: any Database

    public init(database: any Database) {
        self.database = database
    }

    static let columns = """
        id, name, mode, schedule, jitter_seconds, app, environment, audience, data, cloudkit, paused, generation,
        next_run_at, last_run_at, created_at, updated_at
        """

    // MARK: Schedules

    public func count(on executor: (any DatabaseExecutor)? = nil) async throws -> Int {
        let executor: any DatabaseExecutor = executor ?? database
        let row = try await executor.queryFirst("SELECT COUNT(*) AS n FROM wake_schedules", [])
        return Int(try row?.int("n") ?? 0)
    }

    func insert(_ schedule: WakeSchedule, on executor: any DatabaseExecutor) async throws {
        var values = Self.values(schedule)
        values.insert(SQLValue(schedule.id), at: 0)
        values.append(SQLValue(schedule.createdAt))
        try await executor.execute(
            """
            INSERT INTO wake_schedules (\(Self.columns))
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $16, $15)
            """,
            values
        )
    }

    /// Writes every field but the id and the creation time.
    func update(_ schedule: WakeSchedule, on executor: any DatabaseExecutor) async throws {
        try await executor.execute(
            """
            UPDATE wake_schedules SET name = $2, mode = $3, schedule = $4, jitter_seconds = $5, app = $6,
                environment = $7, audience = $8, data = $9, cloudkit = $10, paused = $11, generation = $12,
                next_run_at = $13, last_run_at = $14, updated_at = $15
            WHERE id = $1
            """,
            [SQLValue(schedule.id)] + Self.values(schedule)
        )
    }

    /// `$2`…`$15` of ``insert`` and ``update``.
    private static func values(_ schedule: WakeSchedule) -> [SQLValue] {
        [
            .text(schedule.name), .text(schedule.mode.rawValue), .text(schedule.schedule.jsonText),
            .integer(schedule.jitterSeconds), SQLValue(schedule.apns?.app),
            SQLValue(schedule.apns?.environment.rawValue), SQLValue(schedule.apns?.audience.jsonText),
            SQLValue(schedule.apns?.data), SQLValue(schedule.cloudkit.map(Self.cloudkitText)),
            SQLValue(schedule.paused), .integer(schedule.generation), SQLValue(schedule.nextRunAt),
            SQLValue(schedule.lastRunAt), SQLValue(schedule.updatedAt),
        ]
    }

    public func schedule(id: UUID, on executor: (any DatabaseExecutor)? = nil) async throws -> WakeSchedule? {
        let lock = executor?.dialect == .postgres ? " FOR UPDATE" : ""
        let executor: any DatabaseExecutor = executor ?? database
        return try await executor.queryFirst(
            "SELECT \(Self.columns) FROM wake_schedules WHERE id = $1" + lock,
            [SQLValue(id)]
        ).map(Self.schedule(from:))
    }

    /// Schedules oldest first, `limit` at a time after `cursor` (``WakeListCursor``'s text).
    public func list(
        limit: Int,
        after cursor: WakeListCursor?
    ) async throws -> (items: [WakeSchedule], next: WakeListCursor?) {
        var sql = "SELECT \(Self.columns) FROM wake_schedules"
        var binds: [SQLValue] = []
        if let cursor {
            sql += " WHERE created_at > $1 OR (created_at = $1 AND id > $2)"
            binds = [SQLValue(cursor.createdAt), SQLValue(cursor.id)]
        }
        sql += " ORDER BY created_at, id LIMIT \(limit + 1)"
        let rows = try await database.query(sql, binds).map(Self.schedule(from:))
        guard rows.count > limit else { return (rows, nil) }
        let kept = Array(rows.prefix(limit))
        return (kept, kept.last.map { WakeListCursor(createdAt: $0.createdAt, id: $0.id) })
    }

    public func delete(id: UUID) async throws -> Bool {
        try await database.transaction { tx in
            // SQLite enforces the cascade only with foreign keys on: delete the runs explicitly.
            _ = try await tx.execute("DELETE FROM wake_runs WHERE schedule_id = $1", [SQLValue(id)])
            return try await tx.execute("DELETE FROM wake_schedules WHERE id = $1", [SQLValue(id)]) > 0
        }
    }

    // MARK: Runs

    /// Takes the occurrence due at `due` for this run: moves the schedule on to `next` (a
    /// compare-and-set on generation and due time) and records the run as running. `false` when
    /// the occurrence is not the schedule's current one (already taken, or made stale).
    func beginOccurrence(
        _ schedule: WakeSchedule,
        due: Date,
        next: Date?,
        now: Date,
        on executor: any DatabaseExecutor
    ) async throws -> Bool {
        let moved = try await executor.execute(
            """
            UPDATE wake_schedules SET next_run_at = $1, last_run_at = $2, updated_at = $2
            WHERE id = $3 AND generation = $4 AND next_run_at = $5 AND paused = 0
            """,
            [SQLValue(next), SQLValue(now), SQLValue(schedule.id), .integer(schedule.generation), SQLValue(due)]
        )
        guard moved == 1 else { return false }
        try await executor.execute(
            """
            INSERT INTO wake_runs (schedule_id, occurrence_at, mode, status, started_at)
            VALUES ($1, $2, $3, 'running', $4) ON CONFLICT DO NOTHING
            """,
            [SQLValue(schedule.id), SQLValue(due), .text(schedule.mode.rawValue), SQLValue(now)]
        )
        return true
    }

    /// Whether a run of an occurrence before `due`, started after `since`, is still sending or
    /// waiting for a retry: the next occurrence waits for it, so that two runs of one schedule
    /// never read and claim the same devices at once.
    func hasUnfinishedRun(scheduleID: UUID, before due: Date, since: Date) async throws -> Bool {
        try await database.queryFirst(
            """
            SELECT 1 AS found FROM wake_runs WHERE schedule_id = $1 AND occurrence_at < $2
                AND status IN ('running', 'retrying') AND started_at > $3 LIMIT 1
            """,
            [SQLValue(scheduleID), SQLValue(due), SQLValue(since)]
        ) != nil
    }

    public func run(scheduleID: UUID, occurrence: Date) async throws -> WakeRun? {
        try await database.queryFirst(
            "SELECT * FROM wake_runs WHERE schedule_id = $1 AND occurrence_at = $2",
            [SQLValue(scheduleID), SQLValue(occurrence)]
        ).map(Self.run(from:))
    }

    /// The newest runs of a schedule first, at most ``WakeLimits/keptRuns``.
    public func runs(scheduleID: UUID) async throws -> [WakeRun] {
        try await database.query(
            "SELECT * FROM wake_runs WHERE schedule_id = $1 ORDER BY occurrence_at DESC LIMIT \(WakeLimits.keptRuns)",
            [SQLValue(scheduleID)]
        ).map(Self.run(from:))
    }

    /// Writes a run's counts and status, and deletes runs beyond the newest ``WakeLimits/keptRuns``.
    func record(_ run: WakeRun, scheduleID: UUID) async throws {
        let codes = (try? JSONValue.array(run.errorCodes.map(JSONValue.string)).jsonBytes()).map {
            String(decoding: $0, as: UTF8.self)
        }
        try await database.transaction { tx in
            try await tx.execute(
                """
                UPDATE wake_runs SET status = $3, finished_at = $4, devices = $5, sent = $6, skipped = $7,
                    failed = $8, record_name = $9, error_codes = $10, error = $11
                WHERE schedule_id = $1 AND occurrence_at = $2
                """,
                [
                    SQLValue(scheduleID), SQLValue(run.occurrenceAt), .text(run.status.rawValue),
                    SQLValue(run.finishedAt), SQLValue(run.devices), SQLValue(run.sent), SQLValue(run.skipped),
                    SQLValue(run.failed), SQLValue(run.recordName), .text(codes ?? "[]"), SQLValue(run.error),
                ]
            )
            try await tx.execute(
                """
                DELETE FROM wake_runs WHERE schedule_id = $1 AND occurrence_at < (
                    SELECT occurrence_at FROM wake_runs WHERE schedule_id = $1
                    ORDER BY occurrence_at DESC LIMIT 1 OFFSET \(WakeLimits.keptRuns - 1))
                """,
                [SQLValue(scheduleID)]
            )
        }
    }

    // MARK: The per-device floor

    /// Claims a wake ping at `now` for each of `tokens` whose last one was at or before `cutoff`
    /// (or never), in one statement, and returns those tokens: two runs at once, on one instance
    /// or two, never both claim a device.
    func claimPings(
        app: String,
        environment: String,
        tokens: [String],
        now: Date,
        cutoff: Date
    ) async throws -> Set<String> {
        guard !tokens.isEmpty else { return [] }
        var claimed: Set<String> = []
        // 4 binds a row plus the cutoff; 500 rows stay under both drivers' parameter limits.
        for start in stride(from: 0, to: tokens.count, by: 500) {
            let chunk = tokens[start..<min(start + 500, tokens.count)]
            var binds: [SQLValue] = [.text(app), .text(environment), SQLValue(now), SQLValue(cutoff)]
            let rows = chunk.map { token -> String in
                binds.append(.text(token))
                return "($1, $2, $\(binds.count), $3)"
            }
            let returned = try await database.query(
                """
                INSERT INTO wake_pings (app, environment, token, last_at) VALUES \(rows.joined(separator: ", "))
                ON CONFLICT (app, environment, token) DO UPDATE SET last_at = excluded.last_at
                WHERE wake_pings.last_at <= $4
                RETURNING token
                """,
                binds
            )
            for row in returned { claimed.insert(try row.string("token")) }
        }
        return claimed
    }

    /// Deletes floor rows older than `cutoff`: they no longer hold anyone back.
    public func prunePings(before cutoff: Date) async throws -> Int {
        try await database.execute("DELETE FROM wake_pings WHERE last_at < $1", [SQLValue(cutoff)])
    }
}

/// Where a page of `GET /v1/wake-schedules` ends: `<created_at ms>.<id>`.
public struct WakeListCursor: Sendable, Hashable {
    var createdAt: Date
    var id: UUID

    public var text: String { "\(EpochTime.milliseconds(createdAt)).\(RequestIdentifier.lowercaseString(id))" }

    public init?(text: String) {
        let parts = text.split(separator: ".", maxSplits: 1)
        guard parts.count == 2, let ms = Int64(parts[0]), let id = RequestIdentifier.uuid(parts[1]) else {
            return nil
        }
        createdAt = Date(timeIntervalSince1970: TimeInterval(ms) / 1000)
        self.id = id
    }

    init(createdAt: Date, id: UUID) {
        self.createdAt = createdAt
        self.id = id
    }
}
