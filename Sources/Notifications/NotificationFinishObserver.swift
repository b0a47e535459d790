import Foundation
public import Storage

/// Told when a notification reaches a final status (done, failed or cancelled), inside the
/// transaction that records it: what it writes commits with the status, and a status moves to
/// final once (a compare-and-set), so it is told exactly once per notification. Webhooks'
/// `notification.finished` event is written this way.
public protocol NotificationFinishObserver: Sendable {
    /// Called inside the transaction that moved `notification` to its final status; `counts` are
    /// its tokens by result as of then. A thrown error rolls the transition back.
    func notificationFinished(
        _ notification: StoredNotification,
        counts: DeliveryCounts,
        on executor: any DatabaseExecutor
    ) async throws

    /// Called after that transaction committed (to wake a job worker).
    func finishCommitted()
}

extension NotificationStatus {
    /// Done, failed or cancelled: the status does not change again.
    public var isFinal: Bool {
        switch self {
        case .scheduled, .sending: false
        case .done, .failed, .cancelled: true
        }
    }
}

extension NotificationStore {
    /// ``transition(_:from:to:failureReason:at:on:reportingFinish:)`` to a final status with a finish observer:
    /// the update and the observer's writes in one transaction (the caller's when given).
    func transitionReportingFinish(
        _ observer: any NotificationFinishObserver,
        on executor: (any DatabaseExecutor)?,
        _ update: @escaping @Sendable (any DatabaseExecutor) async throws -> StoredNotification?
    ) async throws -> StoredNotification? {
        let report: @Sendable (any DatabaseExecutor) async throws -> StoredNotification? = { tx in
            guard let finished = try await update(tx) else { return nil }
            try await observer.notificationFinished(
                finished,
                counts: try await Self.counts(id: finished.id, on: tx),
                on: tx
            )
            return finished
        }
        if let executor { return try await report(executor) }
        let finished = try await database.transaction { tx in try await report(tx) }
        if finished != nil { observer.finishCommitted() }
        return finished
    }
}
