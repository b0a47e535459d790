public import APNs
import Audiences
public import Devices
public import Foundation
public import HTTPRouting
import HeraldCore
public import HeraldFeature
import Jobs

/// The durable notifications API under `/v1`, behind an API key (``Notifications/feature``):
///
/// - `POST /v1/notifications` with `tokens` or an `audience` → 202 `{"id", "status", "send_at",
///   "tokens", "audience_kind"}` once stored; with `?wait=true` (≤ 1,000 tokens, no `send_at`, no
///   audience resolved at send time) → 200 with every token's result. Accepts `Idempotency-Key`.
/// - `GET /v1/notifications?status=&app=&created_after=&created_before=&limit=&cursor=` → newest
///   first, keyset-paged.
/// - `GET /v1/notifications/{id}?limit=&cursor=` → status, audience, progress (``ProgressBody``),
///   counts and a page of results.
/// - `DELETE /v1/notifications/{id}` → cancels a scheduled notification; 409 once it started.
/// - `GET /v1/dead-tokens?app=&environment=&since=&limit=&cursor=` → tokens APNs called dead.
///
/// Input is strict: an unknown query parameter is 400 `unknown_parameter`, a body not sent as
/// `application/json` is 415, and JSON with trailing commas or duplicate keys is 400 naming the
/// line and column (unlike the relay's routes, which keep feditext-apns' lenient contract).
public struct NotificationRoutes: Sendable {
    public let service: NotificationService

    public init(service: NotificationService) {
        self.service = service
    }

    /// The five routes, behind an API key (checked on the headers, before the server reads a
    /// body of up to 4 MiB here).
    public var routes: [FeatureRoute] {
        let routes = self
        var notifications = RouteGroup("/v1/notifications", authentication: .apiKey)
        // 10,000 tokens of up to 200 characters: this route alone takes bodies up to 4 MiB.
        notifications.post(
            "",
            query: ["wait"],
            maxBodySize: NotificationLimits.maximumBodyBytes,
            idempotent: true
        ) { try await routes.create($0) }
        notifications.describe("POST", "", Self.createOperation)
        notifications.get("", query: Self.listParameters) { try await routes.list($0) }
        notifications.describe("GET", "", Self.listOperation)
        notifications.get("/{id}", query: Paging.parameters) { try await routes.read($0) }
        notifications.describe("GET", "/{id}", Self.readOperation)
        notifications.delete("/{id}") { try await routes.cancel($0) }
        notifications.describe("DELETE", "/{id}", Self.cancelOperation)
        var deadTokens = RouteGroup("/v1/dead-tokens", authentication: .apiKey)
        deadTokens.get("", query: Self.deadTokenParameters) { try await routes.deadTokens($0) }
        deadTokens.describe("GET", "", Self.deadTokensOperation)
        return notifications.routes + deadTokens.routes
    }

    /// The query parameters of `GET /v1/dead-tokens`.
    static let deadTokenParameters = ["app", "environment", "since"] + Paging.parameters

    // MARK: Handlers

    func create(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (wait, parsed) = try Self.parseCreate(request, now: service.now())
        if wait {
            do {
                let result = try await service.createAndWait(parsed)
                return .json(
                    NotificationBody(result.notification, counts: result.counts, results: result.results, next: nil)
                )
            } catch let interrupted as NotificationService.WaitInterrupted {
                // Created and committed: its backup job sends it. An error here would make a
                // client retry into a second notification.
                return Self.accepted(interrupted.notification)
            }
        }
        return Self.accepted(try await service.create(parsed))
    }

    /// 202 with the notification's id and where to read it.
    static func accepted(_ notification: StoredNotification) -> HTTPResponse {
        let body = AcceptedBody(notification)
        var response = HTTPResponse.json(body, status: 202)
        response.headers.replaceOrAdd(name: "Location", value: "/v1/notifications/\(body.id)")
        return response
    }

    func read(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (id, limit, cursor) = try Self.parseRead(request)
        let details = try await service.details(id: id, limit: limit, cursor: cursor)
        return .json(
            NotificationBody(
                details.notification,
                counts: details.counts,
                results: details.results.items,
                next: details.results.nextCursor,
                audience: details.audience?.audience
            )
        )
    }

    func cancel(_ request: HTTPRequest) async throws -> HTTPResponse {
        let cancelled = try await service.cancel(id: try Self.id(request))
        let counts = try await service.counts(id: cancelled.id)
        return .json(NotificationBody(cancelled, counts: counts, results: nil, next: nil))
    }

    func deadTokens(_ request: HTTPRequest) async throws -> HTTPResponse {
        let query = try Self.parseDeadTokens(request)
        let page = try await service.deadTokens(
            app: query.app,
            environment: query.environment,
            since: query.since,
            limit: query.limit,
            cursor: query.cursor
        )
        return .json(PageBody("dead_tokens", page.items.map(DeadTokenBody.init), nextCursor: page.nextCursor))
    }

    // MARK: Parsing

    /// `POST /v1/notifications`: the `wait` flag and the validated body.
    public static func parseCreate(
        _ request: HTTPRequest,
        now: Date
    ) throws -> (wait: Bool, request: NotificationRequest) {
        let wait = try flag(request, "wait")
        return (wait, try NotificationRequest.parse(request.body, now: now))
    }

    /// `GET /v1/notifications/{id}`: the id, the page size and the cursor.
    public static func parseRead(_ request: HTTPRequest) throws(HTTPError) -> (id: UUID, limit: Int, cursor: String?) {
        let id = try id(request)
        let limit = try request.pageLimit()
        let cursor = request.queryValue("cursor")
        if let cursor, Int(cursor) == nil { throw Paging.invalidCursor() }
        return (id, limit, cursor)
    }

    /// The query of `GET /v1/dead-tokens`, checked.
    public struct DeadTokensQuery: Sendable {
        public var app: String?
        public var environment: APNSEnvironment?
        public var since: Date?
        public var limit: Int
        public var cursor: DeadTokenCursor?
    }

    /// `GET /v1/dead-tokens`: every query parameter range-checked (400 naming it).
    public static func parseDeadTokens(_ request: HTTPRequest) throws(HTTPError) -> DeadTokensQuery {
        let environment = try request.environmentFilter()
        let since = try time(request, "since")
        var cursor: DeadTokenCursor?
        if let text = request.queryValue("cursor") {
            guard let parsed = DeadTokenCursor(text) else { throw Paging.invalidCursor() }
            cursor = parsed
        }
        return DeadTokensQuery(
            app: try app(request),
            environment: environment,
            since: since,
            limit: try request.pageLimit(),
            cursor: cursor
        )
    }

    // MARK: Query parameters

    static func id(_ request: HTTPRequest) throws(HTTPError) -> UUID {
        guard let text = request.parameters["id"], let id = RequestIdentifier.uuid(text) else {
            throw HTTPError(
                status: 404,
                code: "not_found",
                message: "that is not a notification id: use the id a POST /v1/notifications answered with",
                field: "id"
            )
        }
        return id
    }

    /// A time query parameter: RFC 3339 or Unix seconds (400 `invalid_<name>` otherwise, with a
    /// hint when the number looks like milliseconds).
    static func time(_ request: HTTPRequest, _ name: String) throws(HTTPError) -> Date? {
        guard let text = request.queryValue(name) else { return nil }
        if let date = RFC3339.date(from: text) { return date }
        // Unix seconds are range-checked here: a later time cannot be stored as milliseconds.
        if let seconds = Int64(text), (0...NotificationLimits.millisecondsThreshold).contains(seconds) {
            return Date(timeIntervalSince1970: Double(seconds))
        }
        if let number = Int64(text), number > NotificationLimits.millisecondsThreshold {
            throw HTTPError(
                status: 400,
                code: "invalid_\(name)",
                message: "\(name) \(number) looks like milliseconds: send Unix seconds (\(number / 1_000)) or an "
                    + "RFC 3339 time such as 2030-01-01T00:00:00Z",
                field: name
            )
        }
        throw HTTPError(
            status: 400,
            code: "invalid_\(name)",
            message: "\(name) must be an RFC 3339 time such as 2030-01-01T00:00:00Z or Unix seconds "
                + "from 0 to \(NotificationLimits.millisecondsThreshold)",
            field: name
        )
    }

    /// The `app` query parameter, length-checked.
    static func app(_ request: HTTPRequest) throws(HTTPError) -> String? {
        try request.appFilter(maximumBytes: NotificationLimits.maximumNameBytes)
    }

    static func flag(_ request: HTTPRequest, _ name: String) throws(HTTPError) -> Bool {
        switch request.queryValue(name) {
        case nil, "false", "0": return false
        case "true", "1", "": return true
        default:
            throw HTTPError(status: 400, code: "invalid_\(name)", message: "\(name) must be true or false", field: name)
        }
    }
}

// MARK: JSON bodies

struct AcceptedBody: Encodable, Sendable {
    var id: String
    var status: String
    var sendAt: Date
    /// The tokens given; 0 for an audience resolved when the send runs.
    var tokens: Int
    var audienceKind: String

    init(_ notification: StoredNotification) {
        id = notification.id.uuidString.lowercased()
        status = notification.status.rawValue
        sendAt = notification.sendAt
        tokens = notification.tokenCount
        audienceKind = notification.audienceKind.rawValue
    }

    enum CodingKeys: String, CodingKey {
        case id, status, tokens
        case sendAt = "send_at"
        case audienceKind = "audience_kind"
    }
}

/// A notification with its counts and progress, its audience when resolved at send time, and its
/// results when asked for: the summary's fields and these.
struct NotificationBody: Encodable, Sendable {
    var summary: NotificationSummaryBody
    var audience: AudienceBody?
    var progress: ProgressBody
    var counts: [String: Int]
    var results: [ResultBody]?
    var nextCursor: String?

    init(
        _ notification: StoredNotification,
        counts: DeliveryCounts,
        results: [DeliveryResult]?,
        next: String?,
        audience: Audience? = nil
    ) {
        summary = NotificationSummaryBody(notification)
        self.audience = audience.map(AudienceBody.init)
        progress = ProgressBody(notification, counts: counts)
        var all: [String: Int] = [:]
        for status in DeliveryStatus.allCases { all[status.rawValue] = counts[status] }
        self.counts = all
        self.results = results?.map(ResultBody.init)
        nextCursor = next
    }

    enum CodingKeys: String, CodingKey {
        case audience, progress, counts, results
        case nextCursor = "next_cursor"
    }

    /// One flat object: the summary's keys beside `audience`, `progress`, `counts`, `results` and
    /// `next_cursor`.
    func encode(to encoder: any Encoder) throws {
        try summary.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(audience, forKey: .audience)
        try container.encode(progress, forKey: .progress)
        try container.encode(counts, forKey: .counts)
        // A page of results, as every list pages (`next_cursor` `null` on the last).
        if let results {
            try container.encode(results, forKey: .results)
            try container.encode(nextCursor, forKey: .nextCursor)
        }
    }
}

struct ResultBody: Encodable, Sendable {
    var token: String
    var status: String
    var reason: String?
    var apnsID: String?
    var invalidAt: Date?
    var attempts: Int
    var updatedAt: Date

    init(_ result: DeliveryResult) {
        token = result.token
        status = result.status.rawValue
        reason = result.reason
        apnsID = result.apnsID
        invalidAt = result.invalidAt
        attempts = result.attempts
        updatedAt = result.updatedAt
    }

    enum CodingKeys: String, CodingKey {
        case token, status, reason, attempts
        case apnsID = "apns_id"
        case invalidAt = "invalid_at"
        case updatedAt = "updated_at"
    }
}

struct DeadTokenBody: Encodable, Sendable {
    var app: String
    var environment: String
    var token: String
    var reason: String
    var invalidAt: Date?
    var recordedAt: Date
    var notificationID: String?

    init(_ token: DeadToken) {
        app = token.app
        environment = token.environment.rawValue
        self.token = token.token
        reason = token.reason
        invalidAt = token.invalidAt
        recordedAt = token.recordedAt
        notificationID = token.notificationID?.uuidString.lowercased()
    }

    enum CodingKeys: String, CodingKey {
        case app, environment, token, reason
        case invalidAt = "invalid_at"
        case recordedAt = "recorded_at"
        case notificationID = "notification_id"
    }
}
