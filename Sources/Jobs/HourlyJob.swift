public import Foundation
public import HeraldCore

/// A maintenance job that every instance registers and schedules at start-up (retention pruning):
/// it runs every hour, once per hour however many instances share the queue (its kind is its
/// unique key, so exactly one chain exists), and an hour missed while no instance ran runs once.
///
/// ```swift
/// let pruning = HourlyJob(kind: "widgets.prune") { now in try await store.prune(before: now) }
/// pruning.register(on: &handlers)
/// try await pruning.schedule(on: queue)
/// ```
public struct HourlyJob: Sendable {
    public let kind: String
    private let work: @Sendable (_ now: Date) async throws -> Void

    /// - Parameter work: one run, given the clock's time when it starts; throwing retries it
    ///   (at most 3 attempts, a minute apart).
    public init(kind: String, _ work: @escaping @Sendable (_ now: Date) async throws -> Void) {
        self.kind = kind
        self.work = work
    }

    /// Registers the job's handler, which reads the time from `clock`.
    public func register(on handlers: inout JobHandlers, clock: any HeraldClock = SystemClock()) {
        handlers.register(kind, options: JobKindOptions(maxAttempts: 3, retryBase: 60)) { [work] _ in
            try await work(clock.now())
            return .done
        }
    }

    /// Adds the hourly job unless it exists (idempotent; safe from several instances at once).
    public func schedule(on queue: JobQueue) async throws {
        try await queue.enqueue(
            NewJob(kind: kind, uniqueKey: kind, schedule: try .every(seconds: 3_600), missedRuns: .runOnce)
        )
    }
}
