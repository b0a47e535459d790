import Foundation
import HeraldCore
import Jobs
import Storage

/// Deletes Live Activities that ended, were cancelled, failed or expired longer than the
/// retention ago (`HERALD_LIVE_ACTIVITY_RETENTION_DAYS`, counted from the activity's last change),
/// with their instances, users and deliveries: the hourly `live_activities.prune` job.
///
/// An activity whose channel Herald created is kept at least until that channel's deletion job
/// has run (`HERALD_CHANNEL_RETENTION` after the end), since that job reads the channel from it.
struct LiveActivityRetention: Sendable {
    static let jobKind = "live_activities.prune"
    /// Activities deleted per transaction.
    static let batchSize = 500

    let store: LiveActivityStore
    /// How long a finished activity is kept.
    let retention: TimeInterval
    /// How long a channel Herald created outlives its activity's end.
    let channelRetention: TimeInterval

    /// The hourly job that runs ``prune(now:)``.
    var job: HourlyJob {
        HourlyJob(kind: Self.jobKind) { now in _ = try await prune(now: now) }
    }

    /// Deletes what finished before the cutoff, a batch per transaction, until none is left.
    /// - Returns: the activities deleted.
    @discardableResult
    func prune(now: Date) async throws -> Int {
        // A day past the channel's retention: its deletion job has run (or is retried) by then.
        let kept = max(retention, channelRetention + 86_400)
        let cutoff = now.addingTimeInterval(-kept)
        var deleted = 0
        while true {
            let batch = try await store.deleteFinished(before: cutoff, limit: Self.batchSize)
            deleted += batch
            if batch < Self.batchSize { return deleted }
        }
    }
}

extension LiveActivityStore {
    /// Deletes up to `limit` activities that finished (ended, cancelled, failed, expired) with their
    /// last change before `cutoff`, with their instances, users and deliveries, in one transaction.
    /// - Returns: how many activities were deleted.
    func deleteFinished(before cutoff: Date, limit: Int) async throws -> Int {
        try await database.transaction { tx in
            let rows = try await tx.query(
                """
                SELECT id FROM live_activities
                WHERE state IN ('ended', 'cancelled', 'failed', 'expired') AND updated_at < $1
                ORDER BY updated_at, id LIMIT $2
                """,
                [SQLValue(cutoff), .integer(Int64(limit))]
            )
            let ids = try rows.map { SQLValue.text(try $0.string("id")) }
            guard !ids.isEmpty else { return 0 }
            let placeholders = (1...ids.count).map { "$\($0)" }.joined(separator: ", ")
            for table in ["live_activity_deliveries", "live_activity_instances", "live_activity_users"] {
                try await tx.execute("DELETE FROM \(table) WHERE live_activity_id IN (\(placeholders))", ids)
            }
            return try await tx.execute("DELETE FROM live_activities WHERE id IN (\(placeholders))", ids)
        }
    }
}
