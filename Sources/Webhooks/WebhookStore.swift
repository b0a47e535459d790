public import Foundation
public import HeraldCore
import HeraldCrypto
public import Storage

/// The `webhooks` table and the delivery state read from `webhook_outbox` (migrations 9 and 10),
/// with the same SQL on SQLite and PostgreSQL. The outbox's writing side is in
/// `WebhookStore+Outbox.swift`.
public struct WebhookStore: Sendable {
    public let database: any Database
    public let clock: any HeraldClock

    public init(database: any Database, clock: any HeraldClock = SystemClock()) {
        self.database = database
        self.clock = clock
    }

    static let columns = "id, url, events, secret, created_at"

    /// Stores a new webhook, generating its secret when the request has none.
    ///
    /// - Throws: ``WebhookError`` (limit reached) when ``WebhookLimits/maximumWebhooks`` exist.
    public func create(_ request: WebhookRequest) async throws -> Webhook {
        let webhook = Webhook(
            id: ResourceIdentifier.next(),
            url: request.url,
            events: request.events,
            secret: request.secret ?? Self.generateSecret(),
            createdAt: clock.now()
        )
        try await database.transaction { tx in
            let count = try await tx.queryFirst("SELECT COUNT(*) AS n FROM webhooks")?.int("n") ?? 0
            guard count < WebhookLimits.maximumWebhooks else {
                throw WebhookError(
                    .limitReached,
                    code: "too_many_webhooks",
                    message: "\(WebhookLimits.maximumWebhooks) webhooks exist, the most allowed: delete one you no "
                        + "longer use (DELETE /v1/webhooks/{id}) or subscribe an existing one to more events"
                )
            }
            try await tx.execute(
                "INSERT INTO webhooks (id, url, events, secret, created_at) VALUES ($1, $2, $3, $4, $5)",
                [
                    SQLValue(webhook.id), .text(webhook.url), .text(Self.eventsText(webhook.events)),
                    .text(webhook.secret), SQLValue(webhook.createdAt),
                ]
            )
        }
        return webhook
    }

    /// A page of webhooks, oldest first, after `cursor` (a ``WebhookCursor`` of the previous
    /// page's last), and the cursor of the next page when there is one.
    public func list(limit: Int, after cursor: WebhookCursor?) async throws -> (items: [Webhook], next: WebhookCursor?)
    {
        var binds: [SQLValue] = []
        var condition = ""
        if let cursor {
            binds = [.integer(cursor.createdAtMilliseconds), .text(cursor.id)]
            condition = "WHERE created_at > $1 OR (created_at = $1 AND id > $2) "
        }
        binds.append(.integer(Int64(limit + 1)))
        let rows = try await database.query(
            "SELECT \(Self.columns) FROM webhooks \(condition)ORDER BY created_at, id LIMIT $\(binds.count)",
            binds
        )
        let items = try rows.prefix(limit).map(Self.webhook(from:))
        let next = rows.count > limit ? items.last.map(WebhookCursor.init(after:)) : nil
        return (items, next)
    }

    public func webhook(id: UUID) async throws -> Webhook? {
        try await database.queryFirst("SELECT \(Self.columns) FROM webhooks WHERE id = $1", [SQLValue(id)])
            .map(Self.webhook(from:))
    }

    /// Pending and dead event counts, deliveries so far and the last error.
    public func state(id: UUID) async throws -> WebhookDeliveryState? {
        guard
            let row = try await database.queryFirst(
                """
                SELECT delivered_count, last_delivery_at, last_error, last_error_at,
                    (SELECT COUNT(*) FROM webhook_outbox WHERE webhook_id = $1 AND status = 'pending') AS pending,
                    (SELECT COUNT(*) FROM webhook_outbox WHERE webhook_id = $1 AND status = 'dead') AS dead
                FROM webhooks WHERE id = $1
                """,
                [SQLValue(id)]
            )
        else { return nil }
        return WebhookDeliveryState(
            pending: Int(try row.int("pending")),
            dead: Int(try row.int("dead")),
            delivered: Int(try row.int("delivered_count")),
            lastDeliveryAt: try row.optionalDate("last_delivery_at"),
            lastError: try row.optionalString("last_error"),
            lastErrorAt: try row.optionalDate("last_error_at")
        )
    }

    /// Deletes the webhook with its undelivered and dead events; false when none has the id.
    public func delete(id: UUID) async throws -> Bool {
        try await database.transaction { tx in
            try await tx.execute("DELETE FROM webhook_outbox WHERE webhook_id = $1", [SQLValue(id)])
            return try await tx.execute("DELETE FROM webhooks WHERE id = $1", [SQLValue(id)]) > 0
        }
    }

    // MARK: Rows

    static func eventsText(_ events: [WebhookEventType]) -> String {
        events.map(\.rawValue).joined(separator: ",")
    }

    static func webhook(from row: SQLRow) throws -> Webhook {
        Webhook(
            id: try row.uuid("id"),
            url: try row.string("url"),
            events: try row.string("events").split(separator: ",").compactMap {
                WebhookEventType(rawValue: String($0))
            },
            secret: try row.string("secret"),
            createdAt: try row.date("created_at")
        )
    }

    /// `whsec_` and 32 random bytes in base64url: 256 bits for HMAC-SHA256.
    static func generateSecret() -> String {
        "whsec_" + Base64URL.encode(SecureRandom.bytes(WebhookLimits.generatedSecretBytes))
    }
}

/// Where a page of `GET /v1/webhooks` starts: after the webhook created at this millisecond with
/// this id. Its text is `<milliseconds>:<id>`.
public struct WebhookCursor: Sendable, Hashable {
    public var createdAtMilliseconds: Int64
    public var id: String

    init(after webhook: Webhook) {
        createdAtMilliseconds = EpochTime.milliseconds(webhook.createdAt)
        id = RequestIdentifier.lowercaseString(webhook.id)
    }

    /// The cursor `text` is, or `nil` when it is not one ``text`` wrote.
    public init?(_ text: String) {
        let parts = text.split(separator: ":", maxSplits: 1)
        guard text.utf8.count <= 64, parts.count == 2, let at = Int64(parts[0]),
            let id = RequestIdentifier.uuid(String(parts[1]))
        else { return nil }
        createdAtMilliseconds = at
        self.id = RequestIdentifier.lowercaseString(id)
    }

    public var text: String { "\(createdAtMilliseconds):\(id)" }
}
