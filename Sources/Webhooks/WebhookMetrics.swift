import HeraldCore

/// The webhooks' Prometheus series.
struct WebhookMetrics: Sendable {
    /// `herald_webhook_deliveries_total{result}`: POSTs by outcome (`success`, `failure`).
    let deliveries: Counter
    /// `herald_webhook_events_total{result}`: events by outcome (`delivered`, `dead`).
    let events: Counter

    init(registry: MetricsRegistry) {
        deliveries = registry.counter(
            "herald_webhook_deliveries_total",
            help: "Webhook POSTs, by result (success: a 2xx answer; failure: any other answer or no answer)."
        )
        events = registry.counter(
            "herald_webhook_events_total",
            help: "Webhook events, by result (delivered; dead: still failing when the retry window ended)."
        )
    }
}
