import Foundation
public import HeraldCore
public import Storage

/// The durable job queue: adds, claims, finishes, cancels and inspects jobs in the `jobs` table.
///
/// Both drivers keep the same semantics. On PostgreSQL several instances claim from one table
/// with `FOR UPDATE SKIP LOCKED`, each claim holding a lease; on SQLite one instance claims inside
/// `BEGIN IMMEDIATE`. Claims read the partial index `jobs_pending_due`, so they stay O(log n)
/// with millions of pending jobs.
///
/// Adding a job on PostgreSQL also sends `NOTIFY herald_jobs` with its due time (milliseconds),
/// delivered when the transaction commits, so idle instances wake up at once; in this process,
/// ``wakeup`` is signalled directly.
///
/// Adding jobs is here; the worker's side is in `JobQueue+Claiming.swift`, operator actions and
/// listings in `JobQueue+Operator.swift`, row decoding in `JobQueue+Rows.swift`.
public final class JobQueue: Sendable {
    /// The channel of the `NOTIFY` sent when a job is added or made due sooner.
    public static let notificationChannel = "herald_jobs"
    /// Limits on what a job may carry.
    public static let maximumKindLength = 100
    public static let maximumPayloadBytes = 1 << 20
    public static let maximumUniqueKeyLength = 200
    public static let maximumAttempts = 100

    public let database: any Database
    public let handlers: JobHandlers
    public let clock: any HeraldClock
    /// Signalled when this process adds a job or a running one finishes; its timed waits run on
    /// ``clock``.
    public let wakeup: JobWakeup
    let metrics: JobMetrics

    public init(
        database: any Database,
        handlers: JobHandlers,
        clock: any HeraldClock = SystemClock(),
        metrics: MetricsRegistry = .shared
    ) {
        self.database = database
        self.handlers = handlers
        self.clock = clock
        self.wakeup = JobWakeup(clock: clock)
        self.metrics = JobMetrics(registry: metrics)
    }

    // MARK: Adding

    /// The job stored for a ``NewJob``, and whether this call inserted it (`false`: a pending or
    /// running job already had the unique key).
    public struct Enqueued: Sendable, Hashable {
        public var job: Job
        public var inserted: Bool
    }

    /// Adds a job in its own transaction; it is durable when this returns.
    @discardableResult
    public func enqueue(_ newJob: NewJob) async throws -> Enqueued {
        let result = try await database.transaction { tx in try await self.enqueue(newJob, on: tx) }
        if result.inserted { wakeup.signal() }
        return result
    }

    /// Adds a job inside the caller's transaction (so it commits with the caller's rows). Call
    /// ``wake()`` after the commit so this process's worker notices it without waiting.
    public func enqueue(_ newJob: NewJob, on executor: any DatabaseExecutor) async throws -> Enqueued {
        try validate(newJob)
        let now = clock.now()
        let dueAt = newJob.dueAt ?? now
        var binds: [SQLValue] = []
        let row = insertRow(newJob, dueAt: dueAt, now: now, binds: &binds)
        let inserted = try await executor.query(
            "\(Self.insertPrefix) \(row) ON CONFLICT DO NOTHING RETURNING \(Self.columns)",
            binds
        )
        if let row = inserted.first {
            try await notify(dueAt: dueAt, on: executor)
            metrics.enqueued.increment(labels: [("kind", newJob.kind)])
            return Enqueued(job: try Self.job(from: row), inserted: true)
        }
        guard let key = newJob.uniqueKey,
            let existing = try await executor.queryFirst(
                "SELECT \(Self.columns) FROM jobs WHERE unique_key = $1 AND status IN ('pending', 'running')",
                [.text(key)]
            )
        else {
            throw JobError(.conflict, "the job could not be stored and no active job holds its unique key; retry")
        }
        return Enqueued(job: try Self.job(from: existing), inserted: false)
    }

    /// Adds many jobs with multi-row inserts inside the caller's transaction (bulk scheduling,
    /// benchmarks). Jobs whose unique key names an active job are skipped. Returns how many were
    /// inserted. Call ``wake()`` after the commit.
    @discardableResult
    public func enqueue(contentsOf newJobs: [NewJob], on executor: any DatabaseExecutor) async throws -> Int {
        let now = clock.now()
        var inserted = 0
        var earliest: Date?
        // 9 binds a row; 400 rows stay under both drivers' parameter limits.
        for start in stride(from: 0, to: newJobs.count, by: 400) {
            let chunk = newJobs[start..<min(start + 400, newJobs.count)]
            var binds: [SQLValue] = []
            binds.reserveCapacity(chunk.count * 9)
            var rows: [String] = []
            for newJob in chunk {
                try validate(newJob)
                let dueAt = newJob.dueAt ?? now
                earliest = min(earliest ?? dueAt, dueAt)
                rows.append(insertRow(newJob, dueAt: dueAt, now: now, binds: &binds))
            }
            inserted += try await executor.execute(
                "\(Self.insertPrefix) \(rows.joined(separator: ", ")) ON CONFLICT DO NOTHING",
                binds
            )
        }
        if let earliest, inserted > 0 { try await notify(dueAt: earliest, on: executor) }
        return inserted
    }

    static let insertPrefix = """
        INSERT INTO jobs (id, kind, payload, status, due_at, attempts, max_attempts, unique_key, schedule,
            missed_runs, created_at, updated_at) VALUES
        """

    /// One `VALUES` row for a new pending job, its nine values appended to `binds`.
    private func insertRow(_ newJob: NewJob, dueAt: Date, now: Date, binds: inout [SQLValue]) -> String {
        let base = binds.count
        binds += [
            .text(RequestIdentifier.lowercaseString(ResourceIdentifier.next())), .text(newJob.kind),
            .text(newJob.payload), SQLValue(dueAt),
            SQLValue(newJob.maxAttempts ?? handlers.options(for: newJob.kind).maxAttempts),
            SQLValue(newJob.uniqueKey), SQLValue(newJob.schedule?.jsonText), .text(newJob.missedRuns.rawValue),
            SQLValue(now),
        ]
        let p = (1...9).map { "$\(base + $0)" }
        return
            "(\(p[0]), \(p[1]), \(p[2]), 'pending', \(p[3]), 0, \(p[4]), \(p[5]), \(p[6]), \(p[7]), \(p[8]), \(p[8]))"
    }

    /// Tells this process's worker to look for due jobs now.
    public func wake() {
        wakeup.signal()
    }

    private func validate(_ job: NewJob) throws(JobError) {
        guard !job.kind.isEmpty, job.kind.utf8.count <= Self.maximumKindLength else {
            throw JobError(.invalid, "a job kind must be 1-\(Self.maximumKindLength) bytes")
        }
        guard job.payload.utf8.count <= Self.maximumPayloadBytes else {
            throw JobError(.invalid, "a job payload must be at most \(Self.maximumPayloadBytes) bytes")
        }
        if let key = job.uniqueKey, key.isEmpty || key.utf8.count > Self.maximumUniqueKeyLength {
            throw JobError(.invalid, "a unique key must be 1-\(Self.maximumUniqueKeyLength) bytes")
        }
        if let attempts = job.maxAttempts, !(1...Self.maximumAttempts).contains(attempts) {
            throw JobError(.invalid, "max attempts must be 1-\(Self.maximumAttempts), not \(attempts)")
        }
    }

    func notify(dueAt: Date, on executor: any DatabaseExecutor) async throws {
        guard executor.dialect == .postgres else { return }
        _ = try await executor.query(
            "SELECT pg_notify($1, $2) AS sent",
            [.text(Self.notificationChannel), .text(String(Int64((dueAt.timeIntervalSince1970 * 1000).rounded())))]
        )
    }
}
