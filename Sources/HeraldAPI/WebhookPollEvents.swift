import APNs
import HeraldCore
public import Polls
public import Storage
public import Webhooks

/// Polls that became final as `poll.finalized` webhook events, recorded in the transaction that
/// made them final: `{"id", "app", "environment", "question", "reason", "voted", "total",
/// "result": [{"option", "count", "names"}]}`. Here rather than in either module: neither
/// depends on the other.
public struct WebhookPollEvents: PollEvents {
    public let webhooks: WebhookEvents

    public init(webhooks: WebhookEvents) {
        self.webhooks = webhooks
    }

    public func pollsFinalized(_ events: [PollEvent], on executor: any DatabaseExecutor) async throws {
        try await webhooks.record(events.map(Self.webhookEvent), on: executor)
    }

    public func pollEventsCommitted() {
        webhooks.committed()
    }

    static func webhookEvent(_ event: PollEvent) -> WebhookEvent {
        WebhookEvent(
            type: .pollFinalized,
            data: [
                ("id", .string(RequestIdentifier.lowercaseString(event.id))), ("app", .string(event.app)),
                ("environment", .string(event.environment == .production ? "production" : "sandbox")),
                ("question", .string(event.result.question)), ("reason", .string(event.reason.rawValue)),
                ("voted", .int(event.result.voted)), ("total", .int(event.result.total)),
                (
                    "result",
                    .array(
                        event.result.options.map { option in
                            .object([
                                ("option", .string(option.option)), ("count", .int(option.count)),
                                ("names", .array(option.names.map(WebhookJSONValue.string))),
                            ])
                        }
                    )
                ),
            ],
            at: event.at
        )
    }
}
