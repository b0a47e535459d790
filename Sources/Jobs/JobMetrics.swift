import HeraldCore

/// The queue's Prometheus series.
struct JobMetrics: Sendable {
    /// Due-to-start latency: from 1 ms to 1 minute (jobs wait for free slots under load).
    static let latencyBuckets: [Double] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    let enqueued: Counter
    let claimed: Counter
    let retries: Counter
    let dead: Counter
    let failed: Counter
    let leaseExpired: Counter
    let leaseLost: Counter
    let dueToStart: Histogram
    let duration: Histogram
    let depth: Gauge
    let oldestDueAge: Gauge

    init(registry: MetricsRegistry) {
        enqueued = registry.counter("herald_jobs_enqueued_total", help: "Jobs added to the queue, by kind.")
        claimed = registry.counter("herald_jobs_claimed_total", help: "Job attempts claimed by this instance, by kind.")
        retries = registry.counter("herald_jobs_retries_total", help: "Attempts that failed and were scheduled again.")
        dead = registry.counter("herald_jobs_dead_total", help: "Jobs that used every attempt and are now dead.")
        failed = registry.counter("herald_jobs_failed_total", help: "Jobs that failed permanently.")
        leaseExpired = registry.counter(
            "herald_jobs_lease_expired_total",
            help: "Running jobs returned to the queue because their lease expired."
        )
        leaseLost = registry.counter(
            "herald_jobs_lease_lost_total",
            help: "Finished attempts not recorded because another instance had taken the job over."
        )
        dueToStart = registry.histogram(
            "herald_jobs_due_to_start_seconds",
            help: "Time from a job's due time to the start of its attempt, by kind.",
            buckets: Self.latencyBuckets
        )
        duration = registry.histogram(
            "herald_jobs_duration_seconds",
            help: "Time an attempt ran, by kind.",
            buckets: Self.latencyBuckets
        )
        depth = registry.gauge("herald_jobs_queue_depth", help: "Jobs in the queue, by status (sampled).")
        oldestDueAge = registry.gauge(
            "herald_jobs_oldest_due_age_seconds",
            help: "How long the longest-waiting due job has waited (0 when none is due; sampled)."
        )
    }
}
