import APNs
import Foundation
import HTTPRouting
import HeraldCore
public import HeraldFeature

/// The Live Activities API under `/v1`, behind an API key (``LiveActivities/feature``):
///
/// - `POST /v1/live-activities` → 201 with the activity (200 for a repeated id with the same body).
/// - `GET /v1/live-activities/{id}` → the activity with its `instances` and last 100 `deliveries`.
/// - `GET /v1/live-activities?user_id=&state=&attributes_type=&limit=&cursor=` → newest first.
/// - `DELETE /v1/live-activities/{id}` → cancels a scheduled one (409 once started).
/// - `POST /v1/live-activities/{id}/update` and `/end` → 202 `{"routes": {…}}`.
/// - `PUT /v1/users/{user_id}/push-to-start-tokens` → 201/200: a user's push-to-start token,
///   for apps that register through their own backend.
/// - `POST /v1/live-activities/{id}/instances` `{"user_id", "activity_id", "device_token"?,
///   "update_token"?, "state"?}` → 201/200: an instance reported through the app's backend, with the
///   rules of the client route (404 unless `user_id` is a user of the activity, 403
///   `not_your_instance`, 409 `too_many_instances`).
///
/// The app-facing routes are in ``ClientLiveActivityRoutes``.
public struct LiveActivityRoutes: Sendable {
    public let service: LiveActivityService

    public init(service: LiveActivityService) {
        self.service = service
    }

    /// The routes, behind an API key checked on the headers, before any body is read.
    public var routes: [FeatureRoute] {
        let routes = self
        var activities = RouteGroup(
            "/v1/live-activities",
            authentication: .apiKey,
            maxBodySize: LiveActivityLimits.maximumBodyBytes
        )
        activities.post("", maxBodySize: LiveActivityLimits.maximumCreateBodyBytes) { try await routes.create($0) }
        activities.get("/{id}") { try await routes.read($0) }
        activities.get("", query: ["user_id", "state", "attributes_type"] + Paging.parameters) {
            try await routes.list($0)
        }
        activities.delete("/{id}") { try await routes.cancel($0) }
        for event in [LiveActivityUpdate.Event.update, .end] {
            activities.post("/{id}/\(event.rawValue)") { try await routes.send($0, event) }
        }
        activities.post("/{id}/instances") { try await routes.reportInstance($0) }
        activities.describe("POST", "", LiveActivityAPI.create)
        activities.describe("GET", "", LiveActivityAPI.list)
        activities.describe("GET", "/{id}", LiveActivityAPI.read)
        activities.describe("DELETE", "/{id}", LiveActivityAPI.cancel)
        activities.describe("POST", "/{id}/update", LiveActivityAPI.send(.update))
        activities.describe("POST", "/{id}/end", LiveActivityAPI.send(.end))
        activities.describe("POST", "/{id}/instances", LiveActivityAPI.backendInstance)
        var users = RouteGroup("/v1/users", authentication: .apiKey, maxBodySize: LiveActivityLimits.maximumBodyBytes)
        users.put("/{user_id}/push-to-start-tokens") { try await routes.putToken($0) }
        users.describe("PUT", "/{user_id}/push-to-start-tokens", LiveActivityAPI.putToken(client: false))
        return activities.routes + users.routes
    }

    // MARK: Handlers

    func create(_ request: HTTPRequest) async throws -> HTTPResponse {
        let input = try LiveActivityInput.parseCreate(request.body, now: service.now())
        let (activity, created) = try await service.create(input)
        return .json(LiveActivityBody(activity: activity).json, status: created ? 201 : 200)
    }

    func read(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (activity, instances, deliveries) = try await service.details(try Self.id(request))
        return .json(LiveActivityBody(activity: activity, instances: instances, deliveries: deliveries).json)
    }

    func list(_ request: HTTPRequest) async throws -> HTTPResponse {
        var filter = LiveActivityStore.Filter()
        filter.userID = request.queryValue("user_id")
        if let user = filter.userID, user.isEmpty || user.utf8.count > LiveActivityLimits.maximumNameBytes {
            throw LiveActivityError.invalid("invalid_user_id", "user_id must be 1 to 255 bytes", field: "user_id")
        }
        if let state = request.queryValue("state") {
            guard let parsed = LiveActivityState(rawValue: state) else {
                throw LiveActivityError.invalid(
                    "invalid_state",
                    "state must be one of \(LiveActivityState.allCases.map(\.rawValue).joined(separator: ", "))",
                    field: "state"
                )
            }
            filter.state = parsed
        }
        filter.attributesType = request.queryValue("attributes_type")
        if let type = filter.attributesType, type.isEmpty || type.utf8.count > LiveActivityLimits.maximumNameBytes {
            throw LiveActivityError.invalid(
                "invalid_attributes_type",
                "attributes_type must be 1 to 255 bytes",
                field: "attributes_type"
            )
        }
        let limit = try request.pageLimit()
        let cursor = request.queryValue("cursor")
        if let cursor {
            let parts = cursor.split(separator: ":", maxSplits: 1)
            guard cursor.utf8.count <= 128, parts.count == 2, Int64(parts[0]) != nil else {
                throw Paging.invalidCursor()
            }
        }
        let page = try await service.list(filter, limit: limit, cursor: cursor)
        return .json(
            PageBody("live_activities", page.items.map { LiveActivityBody(activity: $0).json }, nextCursor: page.next)
                .json
        )
    }

    func cancel(_ request: HTTPRequest) async throws -> HTTPResponse {
        .json(LiveActivityBody(activity: try await service.cancel(try Self.id(request))).json)
    }

    func send(_ request: HTTPRequest, _ event: LiveActivityUpdate.Event) async throws -> HTTPResponse {
        let id = try Self.id(request)
        let (update, hasContent) = try LiveActivityInput.parseUpdate(request.body, event: event)
        let routes =
            event == .update
            ? try await service.update(id, update) : try await service.end(id, update, hasContent: hasContent)
        return routes.response
    }

    func reportInstance(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = try Self.id(request)
        let (input, user) = try LiveActivityInput.parseBackendInstance(request.body)
        let (instance, created) = try await service.register(input, for: id, userID: user, app: nil)
        return .json(LiveActivityInstanceBody(instance: instance).json, status: created ? 201 : 200)
    }

    func putToken(_ request: HTTPRequest) async throws -> HTTPResponse {
        let user = request.parameters["user_id"] ?? ""
        guard !user.isEmpty, user.utf8.count <= LiveActivityLimits.maximumNameBytes else {
            throw LiveActivityError.invalid("invalid_user_id", "the user id must be 1 to 255 bytes", field: "user_id")
        }
        let input = try LiveActivityInput.parsePushToStart(request.body)
        return try await Self.register(input, user: user, service: service)
    }

    static func register(
        _ input: LiveActivityInput.PushToStart,
        user: String,
        service: LiveActivityService
    ) async throws -> HTTPResponse {
        let (app, environment) = try service.resolve(app: input.app, environment: input.environment)
        var resolved = input
        resolved.app = app.bundleID
        resolved.environment = environment
        let (token, created) = try await service.register(resolved, userID: user)
        return .json(
            PushToStartBody(
                token: token,
                app: app.bundleID,
                environment: environment.rawValue,
                attributesType: input.attributesType
            ),
            status: created ? 201 : 200
        )
    }

    /// The path's activity id (404 when it is not a UUID: no activity can have it).
    static func id(_ request: HTTPRequest) throws(LiveActivityError) -> UUID {
        guard let id = RequestIdentifier.uuid(request.parameters["id"] ?? "") else { throw .notFound }
        return id
    }
}
