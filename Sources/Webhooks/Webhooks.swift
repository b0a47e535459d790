import HeraldCore
public import HeraldFeature

/// Webhooks as a feature: `/v1/webhooks` behind an API key (``WebhookRoutes``), their settings,
/// the `webhooks` and `webhook_outbox` tables, the `webhook.deliver` job and the event types a
/// webhook subscribes to.
///
/// Its routes are built from the ``WebhookStore``, ``WebhookConfiguration`` and
/// ``WebhookDestinationPolicy`` `herald serve` provides; the store is shared with the domains whose
/// transactions record events, and the deliverer is still wired by `herald serve` itself.
public enum Webhooks {
    public static let feature = HeraldFeature(
        name: "Webhooks",
        settings: [.webhookAllowHTTP, .webhookAllowPrivate, .webhookCAFile],
        migrations: WebhookMigrations.all,
        jobKinds: [WebhookJobKind.deliver],
        webhookEventTypes: WebhookEventType.allCases.map(\.rawValue),
        retention: [
            "An event until it is delivered or its webhook deleted; a dead one (out of retries) 7 days, for inspection."
        ]
    ) { context in
        WebhookRoutes(
            store: try context.service(WebhookStore.self),
            events: try context.service(WebhookEvents.self),
            allowHTTP: try context.service(WebhookConfiguration.self).allowHTTP,
            destinations: try context.service(WebhookDestinationPolicy.self)
        ).routes
    }
}
