import HeraldCore

/// The webhooks' Prometheus series.
struct WebhookMetrics: Sendable {
    /// `herald_webhook_deliveries_total{result}`: POSTs by outcome (`success`, `failure`).
    let deliveries: Counter
    /// `herald_webhook_events_total{result}`: events by outcome (`delivered`, `dead`).
    let events: Counter
    /// `herald_webhook_destinations_refused_total{stage}`: destinations refused by the policy.
    let destinationsRefused: Counter

    init(registry: MetricsRegistry) {
        deliveries = registry.counter(
            "herald_webhook_deliveries_total",
            help: "Webhook POSTs, by result (success: a 2xx answer; failure: any other answer or no answer)."
        )
        events = registry.counter(
            "herald_webhook_events_total",
            help: "Webhook events, by result (delivered; dead: still failing when the retry window ended)."
        )
        destinationsRefused = Self.destinationsRefused(registry)
    }

    /// Declared here and by ``WebhookDestinationPolicy`` (creation), one family for both.
    static func destinationsRefused(_ registry: MetricsRegistry) -> Counter {
        registry.counter(
            "herald_webhook_destinations_refused_total",
            help: "Webhook destinations refused as loopback, private, link-local or otherwise not public, by stage "
                + "(creation: POST /v1/webhooks answered 400; delivery: the address connected to, events dead)."
        )
    }
}
