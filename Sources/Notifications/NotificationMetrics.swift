import HeraldCore

/// The notifications API's Prometheus series.
struct NotificationMetrics: Sendable {
    /// `herald_notifications_accepted_total{mode}`: `immediate`, `scheduled` or `wait`.
    let accepted: Counter
    /// `herald_notification_tokens_total{result}`: one per token result (`sent`, `rejected`,
    /// `dead`, `retrying`, `failed`).
    let tokens: Counter
    /// `herald_notifications_tokens_accepted_total`: tokens in accepted notifications.
    let acceptedTokens: Counter

    init(registry: MetricsRegistry) {
        accepted = registry.counter(
            "herald_notifications_accepted_total",
            help: "Notifications stored by POST /v1/notifications, by mode (immediate, scheduled, wait)."
        )
        tokens = registry.counter(
            "herald_notification_tokens_total",
            help: "Device tokens sent for notifications, by result (sent, rejected, dead, retrying, failed)."
        )
        acceptedTokens = registry.counter(
            "herald_notifications_tokens_accepted_total",
            help: "Device tokens in notifications stored by POST /v1/notifications."
        )
    }
}
