import APNs
import HeraldCore
public import Notifications
public import Storage

// `notification.finished`: written in the transaction that moves a notification to its final
// status, so it is recorded exactly once, and only if that status commits.
extension WebhookEvents: NotificationFinishObserver {
    public func notificationFinished(
        _ notification: StoredNotification,
        counts: DeliveryCounts,
        on executor: any DatabaseExecutor
    ) async throws {
        try await record(
            [
                .notificationFinished(
                    id: notification.id,
                    app: notification.app,
                    environment: notification.environment == .production ? "production" : "sandbox",
                    status: notification.status.rawValue,
                    counts: Self.finalCounts(counts, status: notification.status),
                    at: store.clock.now()
                )
            ],
            on: executor
        )
    }

    public func finishCommitted() {
        committed()
    }

    /// Counts by result as they stand once the notification is final: tokens still without a
    /// result (the status changes just before they are marked) count as cancelled for a cancelled
    /// notification and failed otherwise. Every result is listed, zeros included.
    static func finalCounts(_ counts: DeliveryCounts, status: NotificationStatus) -> [(String, Int)] {
        var final = counts.counts
        let unfinished = (final.removeValue(forKey: .pending) ?? 0) + (final.removeValue(forKey: .retrying) ?? 0)
        final[status == .cancelled ? .cancelled : .failed, default: 0] += unfinished
        return DeliveryStatus.allCases.filter(\.isFinal).map { ($0.rawValue, final[$0] ?? 0) }
    }
}
