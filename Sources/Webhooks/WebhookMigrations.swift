public import Storage

/// The webhooks (`webhooks`, `Webhooks 1`) and their outbox of events to deliver
/// (`webhook_outbox`, `Webhooks 2`). Numbered in this module (``Storage/Migration``); never
/// change one that has shipped.
///
/// An outbox row is one event for one webhook: it is written in the transaction that records the
/// event, leaves `pending` only when the receiver answered 2xx (the row is deleted) or the retry
/// window ended (`dead`, kept until the webhook is deleted).
public enum WebhookMigrations {
    public static let all: [Migration] = [
        Migration(
            module: "Webhooks",
            number: 1,
            name: "create_webhooks",
            releasedAs: 9,
            sql: """
                CREATE TABLE webhooks (
                    id TEXT PRIMARY KEY,
                    url TEXT NOT NULL,
                    events TEXT NOT NULL,
                    secret TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    delivered_count BIGINT NOT NULL DEFAULT 0,
                    last_delivery_at BIGINT,
                    last_error TEXT,
                    last_error_at BIGINT
                );
                CREATE INDEX webhooks_created ON webhooks (created_at, id);
                """
        ),
        Migration(
            module: "Webhooks",
            number: 2,
            name: "create_webhook_outbox",
            releasedAs: 10,
            sql: """
                CREATE TABLE webhook_outbox (
                    webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
                    event_id TEXT NOT NULL,
                    event_type TEXT NOT NULL,
                    event TEXT NOT NULL,
                    status TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    due_at BIGINT NOT NULL,
                    attempts BIGINT NOT NULL DEFAULT 0,
                    first_attempt_at BIGINT,
                    last_error TEXT,
                    PRIMARY KEY (webhook_id, event_id)
                );
                CREATE INDEX webhook_outbox_due ON webhook_outbox (webhook_id, due_at) WHERE status = 'pending';
                CREATE INDEX webhook_outbox_dead ON webhook_outbox (webhook_id) WHERE status = 'dead';
                """
        ),
    ]
}
