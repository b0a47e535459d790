import APNs
public import LiveActivities
public import Storage
public import Webhooks

/// Live Activities' started, ended and failed activities as webhook events
/// (`live_activity.started`, `live_activity.ended`, `live_activity.failed`), recorded in the
/// transaction that changed the activity. Here rather than in either module: neither depends on
/// the other.
public struct WebhookLiveActivityEvents: LiveActivityEvents {
    public let webhooks: WebhookEvents

    public init(webhooks: WebhookEvents) {
        self.webhooks = webhooks
    }

    public func liveActivitiesChanged(_ events: [LiveActivityEvent], on executor: any DatabaseExecutor) async throws {
        try await webhooks.record(events.map(Self.webhookEvent), on: executor)
    }

    public func liveActivityEventsCommitted() {
        webhooks.committed()
    }

    static func webhookEvent(_ event: LiveActivityEvent) -> WebhookEvent {
        let (type, reason): (WebhookEventType, String?) =
            switch event.kind {
            case .started: (.liveActivityStarted, nil)
            case .ended(let why): (.liveActivityEnded, why.rawValue)
            case .failed(let why): (.liveActivityFailed, why)
            }
        return .liveActivity(
            type,
            id: event.id,
            app: event.app,
            environment: event.environment == .production ? "production" : "sandbox",
            attributesType: event.attributesType,
            reason: reason,
            at: event.at
        )
    }
}
