public import Foundation
public import HeraldCore
public import Jobs

/// Deletes finished notifications and their per-token results (dead tokens are invalid devices
/// now, which `DeviceRetention` deletes): a recurring job (`notifications.prune`, hourly) that every instance schedules at start-up under
/// one unique key, so exactly one chain exists however many instances run.
public struct NotificationRetention: Sendable {
    public static let jobKind = "notifications.prune"

    public let store: NotificationStore
    /// How long finished notifications and their results are kept.
    public var retention: TimeInterval

    public init(store: NotificationStore, retention: TimeInterval) {
        self.store = store
        self.retention = retention
    }

    /// Registers the pruning job's handler.
    public func register(on handlers: inout JobHandlers, clock: any JobClock = SystemJobClock()) {
        handlers.register(Self.jobKind, options: JobKindOptions(maxAttempts: 3, retryBase: 60)) { _ in
            try await prune(now: clock.now())
            return .done
        }
    }

    /// Adds the hourly job unless it exists (idempotent; safe from several instances at once).
    public func schedule(on queue: JobQueue) async throws {
        try await queue.enqueue(
            NewJob(
                kind: Self.jobKind,
                uniqueKey: Self.jobKind,
                schedule: try .every(seconds: 3_600),
                missedRuns: .runOnce
            )
        )
    }

    /// Deletes what is older than the retention periods, in batches until none is left.
    public func prune(now: Date) async throws {
        while try await store.prune(finishedBefore: now.addingTimeInterval(-retention)) > 0 {}
    }
}
