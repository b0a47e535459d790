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

    /// The hourly job that runs ``prune(now:)``.
    public var job: HourlyJob {
        HourlyJob(kind: Self.jobKind) { now in try await prune(now: now) }
    }

    /// Registers the pruning job's handler.
    public func register(on handlers: inout JobHandlers, clock: any HeraldClock = SystemClock()) {
        job.register(on: &handlers, clock: clock)
    }

    /// Adds the hourly job unless it exists (idempotent; safe from several instances at once).
    public func schedule(on queue: JobQueue) async throws {
        try await job.schedule(on: queue)
    }

    /// Deletes what is older than the retention periods, in batches until none is left.
    public func prune(now: Date) async throws {
        while try await store.prune(finishedBefore: now.addingTimeInterval(-retention)) > 0 {}
    }
}
