public import Foundation
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
    public let clock: any JobClock
    /// Signalled when this process adds a job or a running one finishes; its timed waits run on
    /// ``clock``.
    public let wakeup: JobWakeup
    let metrics: JobMetrics

    public init(
        database: any Database,
        handlers: JobHandlers,
        clock: any JobClock = SystemJobClock(),
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
            .text(RequestIdentifier.lowercaseString(RequestIdentifier.nextUUID())), .text(newJob.kind),
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

    private func notify(dueAt: Date, on executor: any DatabaseExecutor) async throws {
        guard executor.dialect == .postgres else { return }
        _ = try await executor.query(
            "SELECT pg_notify($1, $2) AS sent",
            [.text(Self.notificationChannel), .text(String(Int64((dueAt.timeIntervalSince1970 * 1000).rounded())))]
        )
    }

    // MARK: Claiming and finishing (the worker's side)

    /// Claims up to `limit` due pending jobs for `owner`, each leased for `lease` seconds, with its
    /// attempt counted. Oldest due first.
    public func claim(owner: String, limit: Int, lease: TimeInterval) async throws -> [Job] {
        let now = clock.now()
        let lock = database.dialect == .postgres ? "FOR UPDATE SKIP LOCKED" : ""
        let rows = try await database.transaction { tx in
            try await tx.query(
                """
                UPDATE jobs SET status = 'running', lease_owner = $1, lease_expires_at = $2,
                    attempts = attempts + 1, started_at = $3, updated_at = $3
                WHERE id IN (
                    SELECT id FROM jobs WHERE status = 'pending' AND due_at <= $3
                    ORDER BY due_at LIMIT $4 \(lock)
                )
                RETURNING \(Self.columns)
                """,
                [.text(owner), SQLValue(now.addingTimeInterval(lease)), SQLValue(now), SQLValue(limit)]
            )
        }
        let jobs = try rows.map(Self.job(from:)).sorted { $0.dueAt < $1.dueAt }
        for job in jobs {
            metrics.claimed.increment(labels: [("kind", job.kind)])
            metrics.dueToStart.observe(max(0, now.timeIntervalSince(job.dueAt)), labels: [("kind", job.kind)])
        }
        return jobs
    }

    /// Records the outcome of `job`'s attempt, if `owner` still holds its lease. For a recurring
    /// job that finished (done, failed, dead or skipped) the next occurrence is added in the same
    /// transaction. Returns the job as stored, or `nil` when the lease was lost (another instance
    /// took the job over after the lease expired).
    @discardableResult
    public func finish(_ job: Job, _ outcome: JobOutcome, owner: String) async throws -> Job? {
        try await finish([(job, outcome)], owner: owner)[0]
    }

    /// Marks a recurring occurrence that was missed while no instance ran as skipped (status
    /// `cancelled`) and schedules the next one after now.
    @discardableResult
    public func skipMissed(_ job: Job, owner: String) async throws -> Job? {
        try await finish([(job, nil)], owner: owner)[0]
    }

    /// Records many outcomes in one transaction (one commit, so one disk flush, for the batch);
    /// a `nil` outcome skips a missed recurring occurrence. Plain completions are one statement.
    /// Returns each job as stored, or `nil` where the lease was lost.
    public func finish(_ outcomes: [(Job, JobOutcome?)], owner: String) async throws -> [Job?] {
        guard !outcomes.isEmpty else { return [] }
        let now = clock.now()
        let decisions = outcomes.map { decide($0.0, $0.1, now: now) }
        let stored = try await database.transaction { tx -> [Job?] in
            var stored = [Job?](repeating: nil, count: decisions.count)
            let plain = decisions.indices.filter { decisions[$0].status == .done && decisions[$0].next == nil }
            if !plain.isEmpty {
                let list = plain.indices.map { "$\($0 + 3)" }.joined(separator: ", ")
                let rows = try await tx.query(
                    """
                    UPDATE jobs SET status = 'done', lease_owner = NULL, lease_expires_at = NULL, updated_at = $2,
                        finished_at = $2
                    WHERE lease_owner = $1 AND status = 'running' AND id IN (\(list))
                    RETURNING \(Self.columns)
                    """,
                    [.text(owner), SQLValue(now)]
                        + plain.map { .text(RequestIdentifier.lowercaseString(decisions[$0].job.id)) }
                )
                var byID: [UUID: Job] = [:]
                for row in rows {
                    let job = try Self.job(from: row)
                    byID[job.id] = job
                }
                for index in plain { stored[index] = byID[decisions[index].job.id] }
            }
            for index in decisions.indices where !(decisions[index].status == .done && decisions[index].next == nil) {
                stored[index] = try await self.apply(decisions[index], owner: owner, now: now, on: tx)
            }
            return stored
        }
        for (decision, job) in zip(decisions, stored) { account(decision, stored: job, now: now) }
        return stored
    }

    /// What an outcome means for the row.
    struct Decision {
        var job: Job
        var status: JobStatus
        var dueAt: Date
        var error: String?
        /// For a recurring job that finished: the next occurrence's due time.
        var next: Date?
        /// A postponed attempt: it does not count against `max_attempts`.
        var uncountsAttempt = false
    }

    func decide(_ job: Job, _ outcome: JobOutcome?, now: Date) -> Decision {
        var decision = Decision(job: job, status: .done, dueAt: job.dueAt)
        switch outcome {
        case .none:
            decision.status = .cancelled
            decision.error =
                "skipped: due at \(RFC3339.string(from: job.dueAt)) while no instance was running (missed-run policy skip)"
        case .done:
            decision.status = .done
        case .failed(let reason):
            decision.status = .failed
            decision.error = reason
        case .retry(let reason, let after):
            decision.error = reason
            if job.attempts < job.maxAttempts {
                decision.status = .pending
                let delay =
                    after
                    ?? handlers.options(for: job.kind).retryDelay(
                        afterAttempt: job.attempts,
                        jitter: Double.random(in: 0...1)
                    )
                decision.dueAt = now.addingTimeInterval(max(0, delay))
            } else {
                decision.status = .dead
            }
        case .postpone(let reason, let until):
            decision.status = .pending
            decision.error = reason
            decision.dueAt = max(until, now)
            decision.uncountsAttempt = true
        }
        if decision.status.isFinished, let schedule = job.schedule {
            decision.next = nextOccurrence(of: job, schedule: schedule, now: now)
        }
        return decision
    }

    /// Writes one decision inside a transaction; `nil` when the lease was lost.
    private func apply(_ decision: Decision, owner: String, now: Date, on tx: any DatabaseExecutor) async throws -> Job?
    {
        let job = decision.job
        let rows = try await tx.query(
            """
            UPDATE jobs SET status = $3, due_at = $4, last_error = COALESCE($5, last_error),
                lease_owner = NULL, lease_expires_at = NULL, updated_at = $6, finished_at = $7,
                attempts = CASE WHEN attempts >= $8 THEN attempts - $8 ELSE 0 END
            WHERE id = $1 AND lease_owner = $2 AND status = 'running'
            RETURNING \(Self.columns)
            """,
            [
                .text(RequestIdentifier.lowercaseString(job.id)), .text(owner), .text(decision.status.rawValue),
                SQLValue(decision.dueAt), SQLValue(decision.error), SQLValue(now),
                decision.status.isFinished ? SQLValue(now) : .null, .integer(decision.uncountsAttempt ? 1 : 0),
            ]
        )
        guard let row = rows.first else { return nil }
        if let next = decision.next { try await enqueueOccurrence(of: job, dueAt: next, on: tx) }
        return try Self.job(from: row)
    }

    /// Adds the occurrence of recurring `job` due at `dueAt`.
    private func enqueueOccurrence(of job: Job, dueAt: Date, on tx: any DatabaseExecutor) async throws {
        let newJob = NewJob(
            kind: job.kind,
            payload: job.payload,
            dueAt: dueAt,
            maxAttempts: job.maxAttempts,
            uniqueKey: job.uniqueKey,
            schedule: job.schedule,
            missedRuns: job.missedRuns
        )
        _ = try await enqueue(newJob, on: tx)
    }

    /// Metrics and wake-ups after a decision was committed.
    private func account(_ decision: Decision, stored: Job?, now: Date) {
        let labels: MetricLabels = [("kind", decision.job.kind)]
        guard stored != nil else {
            metrics.leaseLost.increment(labels: labels)
            return
        }
        switch decision.status {
        case .pending where !decision.uncountsAttempt: metrics.retries.increment(labels: labels)
        case .pending: break
        case .dead: metrics.dead.increment(labels: labels)
        case .failed: metrics.failed.increment(labels: labels)
        case .done, .cancelled, .running: break
        }
        if decision.status != .pending, let started = decision.job.startedAt {
            metrics.duration.observe(max(0, now.timeIntervalSince(started)), labels: labels)
        }
        if decision.next != nil || decision.status == .pending { wakeup.signal() }
    }

    /// The next due time of a recurring job that just ran: for an interval, the first multiple of
    /// it after now counted from the previous due time (the phase is kept); for cron, the first
    /// occurrence after both the previous due time and now. Either way one run covers every
    /// occurrence that passed meanwhile.
    func nextOccurrence(of job: Job, schedule: RecurrenceSchedule, now: Date) -> Date? {
        switch schedule {
        case .interval(let seconds):
            let step = TimeInterval(seconds)
            let elapsed = max(0, now.timeIntervalSince(job.dueAt))
            return job.dueAt.addingTimeInterval(step * (floor(elapsed / step) + 1))
        case .cron:
            return schedule.nextOccurrence(after: max(job.dueAt, now))
        }
    }

    /// Pushes the leases of every job `owner` is running to `lease` seconds from now.
    @discardableResult
    public func extendLeases(owner: String, lease: TimeInterval) async throws -> Int {
        let now = clock.now()
        return try await database.execute(
            "UPDATE jobs SET lease_expires_at = $2 WHERE lease_owner = $1 AND status = 'running'",
            [.text(owner), SQLValue(now.addingTimeInterval(lease))]
        )
    }

    /// Pushes the leases of every job `owner` is running to `lease` seconds from now, and returns
    /// the ids of those jobs: a job the owner runs that is not among them was taken over.
    public func renewLeases(owner: String, lease: TimeInterval) async throws -> Set<UUID> {
        let now = clock.now()
        let rows = try await database.query(
            "UPDATE jobs SET lease_expires_at = $2 WHERE lease_owner = $1 AND status = 'running' RETURNING id",
            [.text(owner), SQLValue(now.addingTimeInterval(lease))]
        )
        return Set(try rows.map { try $0.uuid("id") })
    }

    /// Returns a running job whose attempt was interrupted (its instance is shutting down) to
    /// `pending`, due as before (so at once), with that attempt not counted. Returns the job as stored, or `nil` when
    /// `owner` no longer held its lease.
    @discardableResult
    public func release(_ job: Job, owner: String) async throws -> Job? {
        let now = clock.now()
        let rows = try await database.query(
            """
            UPDATE jobs SET status = 'pending', attempts = CASE WHEN attempts > 0 THEN attempts - 1
                ELSE 0 END, lease_owner = NULL, lease_expires_at = NULL, updated_at = $3,
                last_error = 'interrupted by shutdown; the attempt was not counted'
            WHERE id = $1 AND lease_owner = $2 AND status = 'running'
            RETURNING \(Self.columns)
            """,
            [.text(RequestIdentifier.lowercaseString(job.id)), .text(owner), SQLValue(now)]
        )
        guard let row = rows.first else { return nil }
        wakeup.signal()
        return try Self.job(from: row)
    }

    /// Returns running jobs whose lease expired (their instance died or stalled) to `pending`, due
    /// now, or makes them `dead` when they have no attempts left; a recurring job made dead gets
    /// its next occurrence, so that its schedule goes on.
    @discardableResult
    public func recoverExpiredLeases() async throws -> Int {
        let now = clock.now()
        let recovered = try await database.transaction { tx -> [Job] in
            let rows = try await tx.query(
                """
                UPDATE jobs SET
                    status = CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'pending' END,
                    due_at = CASE WHEN attempts >= max_attempts THEN due_at ELSE $1 END,
                    lease_owner = NULL, lease_expires_at = NULL, updated_at = $1,
                    last_error = 'lease expired: the instance running it stopped before finishing',
                    finished_at = CASE WHEN attempts >= max_attempts THEN $1 ELSE NULL END
                WHERE status = 'running' AND lease_expires_at < $1
                RETURNING \(Self.columns)
                """,
                [SQLValue(now)]
            )
            let jobs = try rows.map(Self.job(from:))
            // A recurring job that died this way keeps its schedule: its next occurrence is added
            // as if the attempt had failed for good, so the chain does not end with a crash.
            for job in jobs where job.status == .dead {
                guard let schedule = job.schedule, let next = self.nextOccurrence(of: job, schedule: schedule, now: now)
                else { continue }
                try await self.enqueueOccurrence(of: job, dueAt: next, on: tx)
            }
            return jobs
        }
        for job in recovered {
            metrics.leaseExpired.increment(labels: [("kind", job.kind)])
            if job.status == .dead { metrics.dead.increment(labels: [("kind", job.kind)]) }
        }
        if !recovered.isEmpty { wakeup.signal() }
        return recovered.count
    }

    /// The earliest due time of a pending job (read from the due index).
    public func nextDueDate() async throws -> Date? {
        try await database.queryFirst("SELECT MIN(due_at) AS next FROM jobs WHERE status = 'pending'")?
            .optionalDate("next")
    }

    /// The earliest lease expiry among running jobs.
    public func nextLeaseExpiry() async throws -> Date? {
        try await database.queryFirst("SELECT MIN(lease_expires_at) AS next FROM jobs WHERE status = 'running'")?
            .optionalDate("next")
    }

    /// Deletes finished jobs (done, failed, cancelled, dead) that finished before `cutoff`, at most
    /// `limit` per call.
    @discardableResult
    public func prune(finishedBefore cutoff: Date, limit: Int = 1_000) async throws -> Int {
        try await database.execute(
            """
            DELETE FROM jobs WHERE id IN (
                SELECT id FROM jobs WHERE status IN ('done', 'failed', 'cancelled', 'dead') AND finished_at < $1
                LIMIT $2
            )
            """,
            [SQLValue(cutoff), SQLValue(limit)]
        )
    }

    // MARK: Operator actions

    /// The job with `id`, or `nil`.
    public func job(id: UUID) async throws -> Job? {
        try await database.queryFirst(
            "SELECT \(Self.columns) FROM jobs WHERE id = $1",
            [.text(RequestIdentifier.lowercaseString(id))]
        ).map(Self.job(from:))
    }

    /// Cancels a pending job. Throws ``JobError/Code/notFound`` or, when it is not pending,
    /// ``JobError/Code/conflict``.
    @discardableResult
    public func cancel(id: UUID) async throws -> Job {
        let now = clock.now()
        let rows = try await database.query(
            """
            UPDATE jobs SET status = 'cancelled', updated_at = $2, finished_at = $2,
                last_error = COALESCE(last_error, 'cancelled')
            WHERE id = $1 AND status = 'pending'
            RETURNING \(Self.columns)
            """,
            [.text(RequestIdentifier.lowercaseString(id)), SQLValue(now)]
        )
        if let row = rows.first { return try Self.job(from: row) }
        throw try await stateError(id: id, action: "cancel", allowed: "pending")
    }

    /// Makes a failed, dead or cancelled job pending again, due now, with its attempts reset.
    @discardableResult
    public func retry(id: UUID) async throws -> Job {
        let now = clock.now()
        let rows: [SQLRow]
        do {
            rows = try await database.query(
                """
                UPDATE jobs SET status = 'pending', due_at = $2, attempts = 0, updated_at = $2, finished_at = NULL
                WHERE id = $1 AND status IN ('failed', 'dead', 'cancelled')
                RETURNING \(Self.columns)
                """,
                [.text(RequestIdentifier.lowercaseString(id)), SQLValue(now)]
            )
        } catch let error as DatabaseError where error.code == .uniqueViolation {
            throw JobError(.conflict, "job \(id) cannot be retried: another pending or running job has its unique key")
        }
        if let row = rows.first {
            let job = try Self.job(from: row)
            try await notify(dueAt: now, on: database)
            wakeup.signal()
            return job
        }
        throw try await stateError(id: id, action: "retry", allowed: "failed, dead or cancelled")
    }

    private func stateError(id: UUID, action: String, allowed: String) async throws -> JobError {
        guard let job = try await job(id: id) else {
            return JobError(.notFound, "no job has the id \(RequestIdentifier.lowercaseString(id))")
        }
        return JobError(
            .conflict,
            "cannot \(action) job \(job.id): it is \(job.status), and only \(allowed) jobs can be"
        )
    }

    /// Jobs with one of `statuses` (all when empty), newest first, at most `limit`.
    public func list(statuses: [JobStatus] = [], kind: String? = nil, limit: Int = 50) async throws -> [Job] {
        var conditions: [String] = []
        var binds: [SQLValue] = []
        if !statuses.isEmpty {
            let placeholders = statuses.map { status -> String in
                binds.append(.text(status.rawValue))
                return "$\(binds.count)"
            }
            conditions.append("status IN (\(placeholders.joined(separator: ", ")))")
        }
        if let kind {
            binds.append(.text(kind))
            conditions.append("kind = $\(binds.count)")
        }
        binds.append(SQLValue(max(1, min(limit, 10_000))))
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        return try await database.query(
            "SELECT \(Self.columns) FROM jobs \(filter) ORDER BY created_at DESC, id LIMIT $\(binds.count)",
            binds
        ).map(Self.job(from:))
    }

    /// Counts by status, and the oldest due time among pending jobs that are already due.
    public struct Summary: Sendable, Hashable {
        public var counts: [JobStatus: Int]
        /// The due time of the longest-waiting due job (`nil`: nothing is due).
        public var oldestDue: Date?
        /// The earliest due time of any pending job.
        public var nextDue: Date?

        public func count(_ status: JobStatus) -> Int { counts[status] ?? 0 }
    }

    public func summary() async throws -> Summary {
        var counts: [JobStatus: Int] = [:]
        for row in try await database.query("SELECT status, COUNT(*) AS n FROM jobs GROUP BY status") {
            if let status = JobStatus(rawValue: try row.string("status")) { counts[status] = Int(try row.int("n")) }
        }
        let next = try await nextDueDate()
        let now = clock.now()
        return Summary(counts: counts, oldestDue: next.flatMap { $0 <= now ? $0 : nil }, nextDue: next)
    }

    // MARK: Rows

    static let columns = """
        id, kind, payload, status, due_at, attempts, max_attempts, last_error, lease_owner, lease_expires_at, \
        unique_key, schedule, missed_runs, created_at, updated_at, started_at, finished_at
        """

    static func job(from row: SQLRow) throws -> Job {
        let statusText = try row.string("status")
        guard let status = JobStatus(rawValue: statusText) else {
            throw JobError(.invalid, "the jobs table holds an unknown status \"\(statusText)\"")
        }
        var schedule: RecurrenceSchedule?
        if let text = try row.optionalString("schedule") {
            do {
                schedule = try RecurrenceSchedule(jsonText: text)
            } catch {
                throw JobError(.invalid, "the jobs table holds an unreadable schedule: \(error.message)")
            }
        }
        return Job(
            id: try row.uuid("id"),
            kind: try row.string("kind"),
            payload: try row.string("payload"),
            status: status,
            dueAt: try row.date("due_at"),
            attempts: Int(try row.int("attempts")),
            maxAttempts: Int(try row.int("max_attempts")),
            lastError: try row.optionalString("last_error"),
            leaseOwner: try row.optionalString("lease_owner"),
            leaseExpiresAt: try row.optionalDate("lease_expires_at"),
            uniqueKey: try row.optionalString("unique_key"),
            schedule: schedule,
            missedRuns: MissedRunPolicy(rawValue: try row.string("missed_runs")) ?? .runOnce,
            createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at"),
            startedAt: try row.optionalDate("started_at"),
            finishedAt: try row.optionalDate("finished_at")
        )
    }
}
