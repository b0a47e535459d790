import Foundation
import HeraldCore
import Storage

// The columns every query returns, and their decoding into a Job.
extension JobQueue {
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
