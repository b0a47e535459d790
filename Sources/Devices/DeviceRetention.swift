public import Foundation
public import HeraldCore
public import Jobs

/// Deletes devices invalid for longer than the retention (`HERALD_INVALID_DEVICE_RETENTION_DAYS`,
/// counted from when Herald recorded APNs' answer): a recurring job (`devices.prune`, hourly) that
/// every instance schedules at start-up under one unique key, so exactly one chain exists however
/// many instances run.
public struct DeviceRetention: Sendable {
    public static let jobKind = "devices.prune"
    /// The default retention: 30 days.
    public static let defaultRetention: TimeInterval = 30 * 86_400

    public let store: DeviceStore
    /// How long an invalid device is kept (and listed by `/v1/dead-tokens`).
    public var retention: TimeInterval

    public init(store: DeviceStore, retention: TimeInterval = DeviceRetention.defaultRetention) {
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

    /// Deletes the devices invalid since before `now` minus the retention, in batches until none is left.
    public func prune(now: Date) async throws {
        while try await store.prune(invalidBefore: now.addingTimeInterval(-retention)) > 0 {}
    }
}
