public import Foundation
public import HeraldCore
import Storage
import Synchronization

/// How a worker runs jobs.
public struct JobWorkerConfiguration: Sendable, Hashable {
    /// Jobs run at once by this instance.
    public var concurrency: Int
    /// Jobs claimed per query.
    public var batchSize: Int
    /// How long a claim holds a job; the worker renews the leases of running jobs every third of
    /// it, so only a dead or stalled instance loses them.
    public var lease: TimeInterval
    /// A recurring job with the `skip` policy whose due time is older than this when claimed was
    /// missed while nothing ran, and is skipped.
    public var missedRunGrace: TimeInterval
    /// Finished jobs are deleted this long after they finish.
    public var retention: TimeInterval
    /// The longest sleep between looks at the queue when nothing wakes the worker.
    public var idleCheckInterval: TimeInterval

    public init(
        concurrency: Int = 64,
        batchSize: Int = 100,
        lease: TimeInterval = 30,
        missedRunGrace: TimeInterval = 60,
        retention: TimeInterval = 7 * 24 * 3_600,
        idleCheckInterval: TimeInterval = 60
    ) {
        self.concurrency = concurrency
        self.batchSize = batchSize
        self.lease = lease
        self.missedRunGrace = missedRunGrace
        self.retention = retention
        self.idleCheckInterval = idleCheckInterval
    }
}

/// Runs due jobs: claims them in batches, runs each with its kind's handler, records the outcome,
/// renews its leases, returns expired leases of dead instances to the queue, and prunes old jobs.
///
/// It sleeps until the next due time, a finished job, a job added by this process, or (on
/// PostgreSQL) a `NOTIFY` from another instance, never on a fixed poll.
public final class JobWorker: Service {
    public let queue: JobQueue
    public let configuration: JobWorkerConfiguration
    /// This instance's name in `lease_owner`; the executable passes ``owner(host:processID:)``.
    public let owner: String
    private let logger: Logger
    private let inFlight = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    /// When the queue-depth gauges were last sampled (milliseconds since 1970); counting every
    /// status reads the whole table, so maintenance does it once a minute, and a scrape of
    /// `/metrics` (``refreshQueueGauges(olderThan:)``) at most as often as it is asked to.
    private let depthSampledAt = Atomic<Int64>(0)
    /// A sample is being taken: concurrent scrapes do not start another.
    private let sampling = Atomic<Bool>(false)

    /// Outcomes that arrive while a batch is being written go together in the next transaction,
    /// so a busy worker pays one commit per batch instead of one per job.
    private let outcomes: GroupCommit<Recorded, Void>

    /// The jobs this worker is running, each with the watch that cancels its handler when the
    /// lease renewal finds the job no longer ours.
    private let runningJobs = Mutex<[UUID: LeaseWatch]>([:])

    /// The pause after failed claims: 0.2 s, doubling to 10 s, without jitter (one loop per
    /// process retries; nothing to spread out).
    static let claimBackoff = Backoff(initial: .milliseconds(200), maximum: .seconds(10), jitter: .none)

    public init(
        queue: JobQueue,
        configuration: JobWorkerConfiguration = JobWorkerConfiguration(),
        owner: String? = nil,
        logger: Logger
    ) {
        self.queue = queue
        self.configuration = configuration
        let owner = owner ?? "worker-\(Self.ownerSuffix())"
        self.owner = owner
        self.logger = logger
        outcomes = GroupCommit(maximumBatch: 500) { batch in
            await Self.record(batch, queue: queue, owner: owner, logger: logger)
            return batch.map { _ in .success(()) }
        }
    }

    /// An owner name an operator can trace to its instance: the host, the process id and a random
    /// suffix (two workers in one process differ).
    public static func owner(host: String, processID: Int32) -> String {
        "\(host.prefix(60))-\(processID)-\(ownerSuffix())"
    }

    private static func ownerSuffix() -> Substring {
        RequestIdentifier.lowercaseString(RequestIdentifier.nextUUID()).prefix(8)
    }

    public func triggerGracefulShutdown() {
        stopping.store(true, ordering: .releasing)
        queue.wakeup.signal()
    }

    public func run() async throws {
        let subscription: DatabaseSubscription?
        do {
            subscription = try await queue.database.subscribe(channel: JobQueue.notificationChannel) {
                [queue] _ in queue.wakeup.signal()
            }
        } catch {
            logger.warning(
                "cannot listen for job notifications; other instances' jobs are seen on the next look",
                metadata: ["error": .string("\(error)")]
            )
            subscription = nil
        }
        logger.info(
            "job worker started",
            metadata: [
                "owner": .string(owner), "concurrency": .int(configuration.concurrency),
                "lease_seconds": .string("\(configuration.lease)"),
                "kinds": .string(queue.handlers.kinds.joined(separator: ",")),
            ]
        )
        await withDiscardingTaskGroup { group in
            await loop(group: &group)
        }
        await subscription?.cancel()
        logger.info("job worker stopped", metadata: ["owner": .string(owner)])
    }

    private func loop(group: inout DiscardingTaskGroup) async {
        var nextMaintenance = Date.distantPast
        var failures = 0
        while true {
            let isStopping = stopping.load(ordering: .acquiring) || Task.isCancelled
            if isStopping, inFlight.load(ordering: .acquiring) == 0 { return }
            let now = queue.clock.now()
            if now >= nextMaintenance {
                await maintain()
                nextMaintenance = now.addingTimeInterval(configuration.lease / 3)
            }
            var deadline = nextMaintenance
            if !isStopping {
                do {
                    let claimedAll = try await claimAndStart(group: &group)
                    failures = 0
                    if claimedAll { continue }
                    if inFlight.load(ordering: .acquiring) < configuration.concurrency,
                        let next = try await queue.nextDueDate()
                    {
                        deadline = min(deadline, next)
                    }
                } catch {
                    failures += 1
                    let pause = Self.claimBackoff.delay(afterAttempt: failures, fraction: 1).timeInterval
                    logger.error(
                        "claiming jobs failed; retrying",
                        metadata: ["error": .string("\(error)"), "retry_in_seconds": .string("\(pause)")]
                    )
                    deadline = min(deadline, queue.clock.now().addingTimeInterval(pause))
                }
            }
            let current = queue.clock.now()
            deadline = min(deadline, current.addingTimeInterval(configuration.idleCheckInterval))
            if Task.isCancelled {
                // Shutdown's grace period ended: only the end of a running job (which signals)
                // changes anything now; a cancellable wait would return at once and spin.
                await queue.wakeup.waitIgnoringCancellation()
            } else if deadline > current {
                await queue.wakeup.wait(until: deadline)
            }
        }
    }

    /// Claims what the free slots allow and starts each job; true when the claim was full (more
    /// may be due right now).
    private func claimAndStart(group: inout DiscardingTaskGroup) async throws -> Bool {
        let free = configuration.concurrency - inFlight.load(ordering: .acquiring)
        // Wait for a quarter of the slots before claiming again, so that a busy worker claims in
        // batches rather than one query per finished job.
        let running = configuration.concurrency - free
        guard free > 0, running == 0 || free >= max(1, min(configuration.batchSize, configuration.concurrency) / 4)
        else { return false }
        let limit = min(free, configuration.batchSize)
        let jobs = try await queue.claim(owner: owner, limit: limit, lease: configuration.lease)
        for job in jobs {
            inFlight.add(1, ordering: .acquiringAndReleasing)
            let watch = LeaseWatch()
            runningJobs.withLock { $0[job.id] = watch }
            group.addTask {
                let attempt = await self.execute(job, watch: watch)
                self.runningJobs.withLock { _ = $0.removeValue(forKey: job.id) }
                switch attempt {
                case .finished(let outcome):
                    await self.submit(job, outcome)
                case .leaseLost:
                    self.logger.warning(
                        "job lease lost to another instance; its handler was cancelled",
                        metadata: ["job": .string(job.id.uuidString.lowercased()), "kind": .string(job.kind)]
                    )
                case .interrupted:
                    await self.release(job)
                }
                self.inFlight.subtract(1, ordering: .acquiringAndReleasing)
                self.queue.wakeup.signal()
            }
        }
        return jobs.count == limit
    }

    /// How one run of a handler ended.
    enum Attempt: Sendable, Hashable {
        /// With an outcome to record (`nil`: a missed recurring occurrence the `skip` policy drops).
        case finished(JobOutcome?)
        /// The lease renewal found the job taken over; the handler was cancelled.
        case leaseLost
        /// The worker was cancelled (shutdown's grace period ended) while the handler ran.
        case interrupted
    }

    /// Runs one claimed job. The handler is cancelled when `watch` reports the lease lost, or when
    /// this task is cancelled; neither counts as the job's outcome.
    func execute(_ job: Job, watch: LeaseWatch = LeaseWatch()) async -> Attempt {
        let now = queue.clock.now()
        let outcome: JobOutcome?
        if job.schedule != nil, job.missedRuns == .skip,
            now.timeIntervalSince(job.dueAt) > configuration.missedRunGrace
        {
            outcome = nil
        } else if let handler = queue.handlers.handler(for: job.kind) {
            let result = await withTaskGroup(of: Result<JobOutcome, any Error>?.self) { group in
                group.addTask {
                    do {
                        return .success(try await handler.run(job))
                    } catch {
                        return .failure(error)
                    }
                }
                // Returns when the lease is lost (or the handler finished and cancelled it).
                group.addTask {
                    await watch.waitUntilLost()
                    return nil
                }
                var result: Result<JobOutcome, any Error>?
                while let next = await group.next() {
                    if let next { result = next }
                    group.cancelAll()
                }
                return result ?? .failure(CancellationError())
            }
            if watch.isLost { return .leaseLost }
            switch result {
            case .success(let value):
                outcome = value
            case .failure(let error):
                if Task.isCancelled { return .interrupted }
                outcome = .retry(reason: "\(error)")
            }
            if Task.isCancelled, case .retry = outcome { return .interrupted }
        } else {
            outcome = .failed(reason: "no handler for job kind \"\(job.kind)\" in this Herald build")
        }
        if case .retry(let reason, _) = outcome, job.attempts >= job.maxAttempts,
            let giveUp = queue.handlers.giveUpHook(for: job.kind)
        {
            await giveUp(job, reason)
        }
        return .finished(outcome)
    }

    /// Returns a job whose handler was cut short by shutdown to the queue, due at once, with its
    /// attempt not counted. This task is cancelled, so the write is exempt from cancellation.
    private func release(_ job: Job) async {
        let queue = self.queue
        let owner = self.owner
        let logger = self.logger
        await withDatabaseCancellationIgnored {
            do {
                let released = try await queue.release(job, owner: owner)
                logger.notice(
                    released == nil
                        ? "job interrupted by shutdown after its lease was taken over"
                        : "job interrupted by shutdown; returned to the queue without counting the attempt",
                    metadata: ["job": .string(job.id.uuidString.lowercased()), "kind": .string(job.kind)]
                )
            } catch {
                logger.error(
                    "could not return a job interrupted by shutdown; it runs again when its lease expires",
                    metadata: ["job": .string(job.id.uuidString.lowercased()), "error": .string("\(error)")]
                )
            }
        }
    }

    // MARK: Recording outcomes (group commit)

    /// A job and what its handler decided (`nil`: it threw), waiting for its write.
    private struct Recorded: Sendable {
        var job: Job
        var outcome: JobOutcome?
    }

    /// Writes an outcome and waits until it is written, in the batch of whatever arrived with it.
    private func submit(_ job: Job, _ outcome: JobOutcome?) async {
        _ = try? await outcomes.submit(Recorded(job: job, outcome: outcome))
    }

    /// Writes a batch of outcomes in one transaction, three times before giving up (the jobs'
    /// leases then expire and they run again).
    private static func record(_ batch: [Recorded], queue: JobQueue, owner: String, logger: Logger) async {
        let outcomes = batch.map { ($0.job, $0.outcome) }
        for attempt in 1...3 {
            do {
                // Exempt from cancellation, so that outcomes reached just before the worker was
                // cancelled are still written.
                let stored = try await withDatabaseCancellationIgnored {
                    try await queue.finish(outcomes, owner: owner)
                }
                for ((job, outcome), recorded) in zip(outcomes, stored) {
                    log(job, outcome, stored: recorded, logger: logger)
                }
                return
            } catch {
                logger.error(
                    "recording job outcomes failed",
                    metadata: [
                        "jobs": .int(outcomes.count), "attempt": .int(attempt), "error": .string("\(error)"),
                    ]
                )
                try? await queue.clock.sleep(for: .milliseconds(200 * attempt))
            }
        }
        logger.error(
            "gave up recording job outcomes; those jobs run again when their leases expire",
            metadata: ["jobs": .int(outcomes.count), "kind": .string(outcomes.first?.0.kind ?? "")]
        )
    }

    private static func log(_ job: Job, _ outcome: JobOutcome?, stored: Job?, logger: Logger) {
        var metadata: [String: LogValue] = [
            "job": .string(job.id.uuidString.lowercased()), "kind": .string(job.kind), "attempt": .int(job.attempts),
        ]
        guard let stored else {
            logger.warning("job finished after its lease was taken over; outcome not recorded", metadata: metadata)
            return
        }
        metadata["status"] = .string(stored.status.rawValue)
        if let error = stored.lastError, stored.status != .done { metadata["error"] = .string(error) }
        switch stored.status {
        case .done: logger.debug("job done", metadata: metadata)
        case .pending:
            metadata["retry_at"] = .string(RFC3339.string(from: stored.dueAt))
            if case .postpone = outcome {
                logger.debug("job postponed; the attempt was not counted", metadata: metadata)
            } else {
                logger.notice("job attempt failed; will retry", metadata: metadata)
            }
        case .dead: logger.error("job dead after its last attempt", metadata: metadata)
        case .failed: logger.warning("job failed", metadata: metadata)
        case .cancelled: logger.notice("missed recurring job skipped", metadata: metadata)
        case .running: break
        }
    }

    /// Renews this instance's leases, recovers expired ones, prunes, and samples the gauges.
    private func maintain() async {
        do {
            if inFlight.load(ordering: .acquiring) > 0 {
                let watched = runningJobs.withLock { $0 }
                let renewed = try await queue.renewLeases(owner: owner, lease: configuration.lease)
                for (id, watch) in watched where !renewed.contains(id) {
                    // Still running here, but no longer ours: another instance recovered it.
                    if runningJobs.withLock({ $0[id] }) === watch { watch.lose() }
                }
            }
            let recovered = try await queue.recoverExpiredLeases()
            if recovered > 0 {
                logger.warning("returned jobs with expired leases to the queue", metadata: ["count": .int(recovered)])
            }
            let now = queue.clock.now()
            let pruned = try await queue.prune(finishedBefore: now.addingTimeInterval(-configuration.retention))
            if pruned > 0 { logger.debug("pruned finished jobs", metadata: ["count": .int(pruned)]) }
            try await sampleQueueGauges(olderThan: .seconds(60))
        } catch {
            logger.error("job queue maintenance failed", metadata: ["error": .string("\(error)")])
        }
    }

    /// Samples the queue-depth and oldest-due gauges unless a sample is younger than `maxAge`
    /// (or being taken): for `/metrics`, so that a scrape sees the queue as it is without every
    /// scrape counting the table. Failures are logged; the gauges keep their last values.
    public func refreshQueueGauges(olderThan maxAge: Duration) async {
        do {
            try await sampleQueueGauges(olderThan: maxAge)
        } catch {
            logger.warning("sampling the job queue gauges failed", metadata: ["error": .string("\(error)")])
        }
    }

    private func sampleQueueGauges(olderThan maxAge: Duration) async throws {
        let now = queue.clock.now()
        let nowMilliseconds = Int64(now.timeIntervalSince1970 * 1000)
        let (seconds, attoseconds) = maxAge.components
        let maxAgeMilliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        guard nowMilliseconds - depthSampledAt.load(ordering: .relaxed) >= maxAgeMilliseconds,
            sampling.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
        else { return }
        defer { sampling.store(false, ordering: .releasing) }
        let summary = try await queue.summary()
        for status in JobStatus.allCases {
            queue.metrics.depth.set(Double(summary.count(status)), labels: [("status", status.rawValue)])
        }
        queue.metrics.oldestDueAge.set(summary.oldestDue.map { max(0, now.timeIntervalSince($0)) } ?? 0)
        depthSampledAt.store(nowMilliseconds, ordering: .relaxed)
    }

    /// One pass for tests and tools: recovers expired leases, then claims and runs every due job
    /// (in batches, `concurrency` at a time) until none is due. Returns how many ran.
    @discardableResult
    public func runDueJobs() async throws -> Int {
        try await queue.recoverExpiredLeases()
        var total = 0
        while true {
            let jobs = try await queue.claim(
                owner: owner,
                limit: min(configuration.batchSize, configuration.concurrency),
                lease: configuration.lease
            )
            if jobs.isEmpty { return total }
            await withDiscardingTaskGroup { group in
                for job in jobs {
                    group.addTask {
                        switch await self.execute(job) {
                        case .finished(let outcome): await self.submit(job, outcome)
                        case .leaseLost: break
                        case .interrupted: await self.release(job)
                        }
                    }
                }
            }
            total += jobs.count
        }
    }
}

/// Tells a running job's handler that its lease was lost: ``lose()`` ends ``waitUntilLost()``.
final class LeaseWatch: Sendable {
    private let lost = Atomic<Bool>(false)
    private let wakeup = JobWakeup()

    var isLost: Bool { lost.load(ordering: .acquiring) }

    func lose() {
        lost.store(true, ordering: .releasing)
        wakeup.signal()
    }

    /// Returns when the lease is lost or the task is cancelled.
    func waitUntilLost() async {
        while !isLost, !Task.isCancelled {
            await wakeup.wait(for: nil)
        }
    }
}
