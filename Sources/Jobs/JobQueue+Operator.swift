public import Foundation
import HeraldCore
import Storage

// What an operator does with single jobs, and the listings the API shows.
extension JobQueue {
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

    /// The statuses of `jobs_attention`, in its WHERE's words: a list of only these names that
    /// WHERE too, so that SQLite reads that index (it uses a partial index only for a query that
    /// repeats its condition).
    static let attentionStatuses: [JobStatus] = [.failed, .dead, .cancelled]
    static let attentionCondition = "status IN ('failed', 'dead', 'cancelled')"

    /// Jobs with one of `statuses` (all when empty), newest first, at most `limit`.
    public func list(statuses: [JobStatus] = [], kind: String? = nil, limit: Int = 50) async throws -> [Job] {
        var conditions: [String] = []
        var binds: [SQLValue] = []
        if !statuses.isEmpty, statuses.allSatisfy(Self.attentionStatuses.contains) {
            conditions.append(Self.attentionCondition)
        }
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
}
