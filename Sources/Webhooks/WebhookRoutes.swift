import Foundation
import HTTPRouting
import HeraldCore
public import HeraldFeature

/// The webhooks API under `/v1`, behind an API key (``Webhooks/feature``):
///
/// - `POST /v1/webhooks` `{"url", "events": [...], "secret"?}` → 201 with the webhook and its
///   secret (generated when not given); the secret is never shown again.
/// - `GET /v1/webhooks?limit=&cursor=` → `{"webhooks": [...], "next_cursor"}` without secrets,
///   oldest first.
/// - `GET /v1/webhooks/{id}` → the webhook and its delivery state (pending and dead events,
///   deliveries, the last error).
/// - `DELETE /v1/webhooks/{id}` → 204; its undelivered events go with it.
/// - `POST /v1/webhooks/{id}/test` → 202 with a `webhook.test` event queued for that webhook
///   alone, delivered, signed and retried as every event is.
public struct WebhookRoutes: Sendable {
    public let store: WebhookStore
    /// Records the test events.
    public let events: WebhookEvents
    /// `HERALD_WEBHOOK_ALLOW_HTTP`: accept `http://` URLs.
    public let allowHTTP: Bool
    /// Which destinations a webhook may have (`HERALD_WEBHOOK_ALLOW_PRIVATE`).
    public let destinations: WebhookDestinationPolicy

    public init(
        store: WebhookStore,
        events: WebhookEvents,
        allowHTTP: Bool,
        destinations: WebhookDestinationPolicy = WebhookDestinationPolicy()
    ) {
        self.store = store
        self.events = events
        self.allowHTTP = allowHTTP
        self.destinations = destinations
    }

    /// The five routes, behind an API key; `POST /v1/webhooks` takes `Idempotency-Key`.
    public var routes: [FeatureRoute] {
        let routes = self
        var group = RouteGroup("/v1/webhooks", authentication: .apiKey, maxBodySize: WebhookLimits.maximumBodyBytes)
        group.post("", idempotent: true) { try await routes.create($0) }
        group.get("", query: Paging.parameters) { try await routes.list($0) }
        group.get("/{id}") { try await routes.read($0) }
        group.delete("/{id}") { try await routes.delete($0) }
        group.post("/{id}/test") { try await routes.test($0) }
        group.describe("POST", "", Self.create)
        group.describe("GET", "", Self.list)
        group.describe("GET", "/{id}", Self.readOperation)
        group.describe("DELETE", "/{id}", Self.deleteOperation)
        group.describe("POST", "/{id}/test", Self.testOperation)
        return group.routes
    }

    func create(_ request: HTTPRequest) async throws -> HTTPResponse {
        let parsed = try WebhookRequest.parse(request.body, allowHTTP: allowHTTP)
        try await destinations.check(url: parsed.url)
        let webhook = try await store.create(parsed)
        var response = HTTPResponse.json(WebhookBody(webhook, secret: webhook.secret, delivery: nil), status: 201)
        response.headers.replaceOrAdd(
            name: "Location",
            value: "/v1/webhooks/\(RequestIdentifier.lowercaseString(webhook.id))"
        )
        return response
    }

    func list(_ request: HTTPRequest) async throws -> HTTPResponse {
        let limit = try request.pageLimit()
        var cursor: WebhookCursor?
        if let text = request.queryValue("cursor") {
            guard let parsed = WebhookCursor(text) else { throw Paging.invalidCursor() }
            cursor = parsed
        }
        let page = try await store.list(limit: limit, after: cursor)
        let webhooks = page.items.map { WebhookBody($0, secret: nil, delivery: nil) }
        return .json(PageBody("webhooks", webhooks, nextCursor: page.next?.text))
    }

    func read(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = try Self.id(request)
        guard let webhook = try await store.webhook(id: id), let state = try await store.state(id: id) else {
            throw WebhookError.notFound(for: id)
        }
        return .json(WebhookBody(webhook, secret: nil, delivery: DeliveryBody(state)))
    }

    func delete(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = try Self.id(request)
        guard try await store.delete(id: id) else { throw WebhookError.notFound(for: id) }
        return HTTPResponse(status: 204)
    }

    func test(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = try Self.id(request)
        let body = try JSONObjectReader<WebhookDomain>(
            body: request.body,
            maximumDepth: 2,
            what: "a test event request",
            example: "{}",
            emptyIsObject: true
        )
        try body.finish(hint: "a test event takes no fields: send no body")
        let event = WebhookEvent.test(webhook: id, at: store.clock.now())
        guard try await events.send(event, to: id) else { throw WebhookError.notFound(for: id) }
        return HTTPResponse(
            status: 202,
            headers: ["Content-Type": "application/json"],
            body: Array(event.json.utf8)
        )
    }

    static func id(_ request: HTTPRequest) throws(HTTPError) -> UUID {
        guard let text = request.parameters["id"], let id = RequestIdentifier.uuid(text) else {
            throw HTTPError(
                status: 404,
                code: "not_found",
                message: "that is not a webhook id: use the id a POST /v1/webhooks answered with, or GET /v1/webhooks",
                field: "id"
            )
        }
        return id
    }
}

extension WebhookError {
    static func notFound(for id: UUID) -> WebhookError {
        WebhookError(
            .notFound,
            code: "not_found",
            message: "no webhook has the id \(RequestIdentifier.lowercaseString(id)): use an id GET /v1/webhooks lists",
            field: "id"
        )
    }
}

/// A webhook as the API shows it; `secret` only in the answer to its `POST`.
struct WebhookBody: Encodable, Sendable {
    var webhook: Webhook
    var secret: String?
    var delivery: DeliveryBody?

    init(_ webhook: Webhook, secret: String?, delivery: DeliveryBody?) {
        self.webhook = webhook
        self.secret = secret
        self.delivery = delivery
    }

    enum CodingKeys: String, CodingKey {
        case id, url, events, secret, delivery
        case createdAt = "created_at"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(RequestIdentifier.lowercaseString(webhook.id), forKey: .id)
        try container.encode(webhook.url, forKey: .url)
        try container.encode(webhook.events.map(\.rawValue), forKey: .events)
        try container.encode(webhook.createdAt, forKey: .createdAt)
        try container.encodeIfPresent(secret, forKey: .secret)
        try container.encodeIfPresent(delivery, forKey: .delivery)
    }
}

/// `delivery` in `GET /v1/webhooks/{id}`.
struct DeliveryBody: Encodable, Sendable {
    var state: WebhookDeliveryState

    init(_ state: WebhookDeliveryState) {
        self.state = state
    }

    enum CodingKeys: String, CodingKey {
        case pending, dead, delivered
        case lastDeliveryAt = "last_delivery_at"
        case lastError = "last_error"
        case lastErrorAt = "last_error_at"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(state.pending, forKey: .pending)
        try container.encode(state.dead, forKey: .dead)
        try container.encode(state.delivered, forKey: .delivered)
        try container.encode(state.lastDeliveryAt, forKey: .lastDeliveryAt)
        try container.encode(state.lastError, forKey: .lastError)
        try container.encode(state.lastErrorAt, forKey: .lastErrorAt)
    }
}
