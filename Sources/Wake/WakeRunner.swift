import APNs
public import APNsTransport
public import Devices
public import Foundation
public import HeraldCore
public import Jobs
import Storage
import Synchronization

/// Runs the `wake.run` jobs: takes the occurrence (once, however many instances share the queue),
/// chains the job of the next one in the same transaction, then wakes the app in the schedule's
/// mode and records the run.
///
/// A job whose schedule was deleted, paused or retimed since it was added ends without running.
/// An attempt that dies mid-run is resumed by the job's next attempt: the occurrence's run row is
/// still `running`, and the per-device floor keeps devices already pinged from a second ping.
public final class WakeRunner: Sendable {
    public let store: WakeStore
    public let devices: DeviceStore
    /// The APNs clients (shared with notifications); `nil` when no app is configured.
    public let clients: APNSClientProvider?
    public let publisher: (any WakeRecordPublisher)?
    public let clock: any HeraldClock
    /// `HERALD_WAKE_MIN_INTERVAL`: the least time between two wake pings to one device.
    public let minimumInterval: TimeInterval
    /// Devices read per page.
    public let pageSize: Int
    /// Pushes in flight at once.
    public let maximumInFlight: Int
    let metrics: WakeMetrics
    let logger: Logger
    private let attached = AttachedJobQueue()

    public static let jobKind = WakeJob.kind
    public static let defaultMinimumInterval: TimeInterval = 1_200
    /// How often an occurrence due while the previous run still sends checks again, in seconds.
    static let overlapRecheck: TimeInterval = 2
    /// A run started longer ago than this no longer holds the next occurrence back (one that
    /// never finished: its instance died and its job gave up).
    static let overlapHorizon: TimeInterval = 3_600

    public init(
        store: WakeStore,
        devices: DeviceStore,
        clients: APNSClientProvider?,
        publisher: (any WakeRecordPublisher)?,
        clock: any HeraldClock = SystemClock(),
        minimumInterval: TimeInterval = WakeRunner.defaultMinimumInterval,
        pageSize: Int = 1_000,
        maximumInFlight: Int = 1_000,
        metrics: MetricsRegistry = .shared,
        logger: Logger = Logger(label: "herald.wake")
    ) {
        self.store = store
        self.devices = devices
        self.clients = clients
        self.publisher = publisher
        self.clock = clock
        self.minimumInterval = max(0, minimumInterval)
        self.pageSize = max(1, pageSize)
        self.maximumInFlight = max(1, maximumInFlight)
        self.metrics = WakeMetrics(registry: metrics)
        self.logger = logger
    }

    /// The queue the next occurrences' jobs go to: the one this runner's handler is registered on.
    public func attach(_ queue: JobQueue) {
        attached.attach(queue)
    }

    /// Registers the `wake.run` handler: CloudKit's retryable failures are retried 5 times, at
    /// least 5 s apart (or after CloudKit's `retryAfter`).
    public func register(on handlers: inout JobHandlers) {
        handlers.register(
            Self.jobKind,
            options: JobKindOptions(maxAttempts: 5, retryBase: 5, retryMaximum: 300),
            onGiveUp: { [self] job, reason in await self.giveUp(job, reason: reason) }
        ) { [self] job in
            try await self.run(job)
        }
    }

    public func run(_ job: Job) async throws -> JobOutcome {
        guard let payload = WakeJob.payload(job.payload) else {
            return .failed(reason: "the job payload has no schedule_id, generation and due_at")
        }
        guard let schedule = try await store.schedule(id: payload.scheduleID) else { return .done }
        var run = try await store.run(scheduleID: schedule.id, occurrence: payload.due)
        if let existing = run, existing.status == .done || existing.status == .failed { return .done }
        if run == nil {
            let now = clock.now()
            if try await store.hasUnfinishedRun(
                scheduleID: schedule.id,
                before: payload.due,
                since: now.addingTimeInterval(-Self.overlapHorizon)
            ) {
                return .postpone(
                    reason: "the run of an earlier occurrence is still sending",
                    until: now.addingTimeInterval(Self.overlapRecheck)
                )
            }
            guard try await begin(schedule, payload: payload) else { return .done }
            run = try await store.run(scheduleID: schedule.id, occurrence: payload.due)
        }
        guard var run else { return .done }
        let outcome: JobOutcome
        switch schedule.mode {
        case .apns:
            outcome = try await sendAPNs(schedule, run: &run)
        case .cloudkit:
            outcome = try await publishRecord(schedule, run: &run, isLastAttempt: job.attempts >= job.maxAttempts)
        }
        if run.status != .retrying { run.finishedAt = clock.now() }
        try await store.record(run, scheduleID: schedule.id)
        metrics.runs.increment(labels: [("mode", schedule.mode.rawValue), ("result", run.status.rawValue)])
        return outcome
    }

    /// Takes the occurrence and adds the next one's job, in one transaction; `false` when the job
    /// is stale or another instance took the occurrence.
    private func begin(_ schedule: WakeSchedule, payload: WakeJob.Payload) async throws -> Bool {
        guard !schedule.paused, schedule.generation == payload.generation,
            let nextRunAt = schedule.nextRunAt,
            EpochTime.milliseconds(nextRunAt) == EpochTime.milliseconds(payload.due)
        else { return false }
        guard let queue = attached.queue else {
            throw WakeError(.notConfigured, code: "no_queue", message: "the wake runner has no job queue attached")
        }
        let now = clock.now()
        let next = Self.nextOccurrence(of: schedule.schedule, due: payload.due, now: now)
        let following = {
            var copy = schedule; copy.nextRunAt = next; return copy
        }()
        let store = self.store
        let began = try await store.database.transaction { tx -> Bool in
            guard try await store.beginOccurrence(schedule, due: payload.due, next: next, now: now, on: tx) else {
                return false
            }
            if let next { _ = try await queue.enqueue(WakeJob.newJob(schedule: following, due: next), on: tx) }
            return true
        }
        if began { queue.wake() }
        return began
    }

    /// The occurrence after the one due at `due`: for an interval the first multiple after now
    /// counted from `due` (the phase is kept), for cron the first after both; occurrences missed
    /// while no instance ran are run once, by this run.
    static func nextOccurrence(of schedule: RecurrenceSchedule, due: Date, now: Date) -> Date? {
        switch schedule {
        case .interval(let seconds):
            let step = TimeInterval(seconds)
            let elapsed = max(0, now.timeIntervalSince(due))
            return due.addingTimeInterval(step * (floor(elapsed / step) + 1))
        case .cron:
            return schedule.nextOccurrence(after: max(due, now))
        }
    }

    /// The job's last attempt failed: the run is recorded failed.
    func giveUp(_ job: Job, reason: String) async {
        guard let payload = WakeJob.payload(job.payload) else { return }
        do {
            guard var run = try await store.run(scheduleID: payload.scheduleID, occurrence: payload.due) else { return }
            run.status = .failed
            run.error = "gave up after \(job.attempts) attempts: \(reason)"
            run.finishedAt = clock.now()
            try await store.record(run, scheduleID: payload.scheduleID)
        } catch {
            logger.error("could not mark a wake run failed", metadata: ["error": .string("\(error)")])
        }
    }
}
