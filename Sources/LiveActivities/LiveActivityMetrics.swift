import HeraldCore

/// The Live Activities' Prometheus series.
struct LiveActivityMetrics: Sendable {
    /// `herald_live_activity_deliveries_total{route, result}`: every push sent for an activity, by
    /// route (`push_to_start`, `broadcast`, `update_token`, `silent`) and result (`delivered`,
    /// `dead_token`, `rejected`, `error`).
    let deliveries: Counter
    /// `herald_live_activity_updates_total{event}`: updates and ends accepted.
    let accepted: Counter

    init(registry: MetricsRegistry) {
        deliveries = registry.counter(
            "herald_live_activity_deliveries_total",
            help: "Pushes sent for Live Activities, by route (push_to_start, broadcast, update_token, silent) "
                + "and result (delivered, dead_token, rejected, error)."
        )
        accepted = registry.counter(
            "herald_live_activity_updates_total",
            help: "Live Activity updates and ends accepted, by event (update, end)."
        )
    }
}
