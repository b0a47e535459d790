import HeraldCore

/// The wake schedules' Prometheus series.
struct WakeMetrics: Sendable {
    /// `herald_wake_runs_total{mode,result}`: runs by mode and result (`done`, `failed`, `retrying`).
    let runs: Counter
    /// `herald_wake_pings_total{mode,result}`: devices per result (`sent`, `skipped`: within the
    /// minimum interval, `failed`, `dead`), and CloudKit records (`sent`, `failed`).
    let pings: Counter

    init(registry: MetricsRegistry) {
        runs = registry.counter(
            "herald_wake_runs_total",
            help: "Wake schedule runs, by mode (apns, cloudkit) and result (done, failed, retrying)."
        )
        pings = registry.counter(
            "herald_wake_pings_total",
            help: "Wake pings, by mode and result (sent; skipped: the device had one within HERALD_WAKE_MIN_INTERVAL; "
                + "failed; dead: APNs called the token dead)."
        )
    }
}
