public import Foundation
import HeraldCore
import Storage

// Claiming, finishing and the lease bookkeeping: the worker's side of the queue.
extension JobQueue {
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
}
