import APNs
import ClientTokens
import Foundation
import HTTPRouting
import HeraldCore
public import HeraldFeature

/// The app-facing Live Activities routes under `/v1/client`, behind a client token
/// (``LiveActivities/feature``); the user is the token's `sub`:
///
/// - `PUT /v1/client/push-to-start-tokens` `{"app"?, "environment"?, "attributes_type", "token"}` →
///   201 when new to the user (also when it was another user's: no answer tells whether a token is
///   known), 200 when the user had it; past `HERALD_CLIENT_MAX_DEVICES` the user's least recently
///   registered one is evicted.
/// - `POST /v1/client/live-activities/{id}/instances` `{"activity_id", "device_token"?,
///   "update_token"?, "state"?}` → 201/200; 404 `not_found` for an unknown id and, with the same
///   body, for an activity the user is not a user of; 403 `not_your_instance` for an instance
///   another user reported first; 409 `too_many_instances` past `HERALD_MAX_INSTANCES_PER_USER`.
/// - `GET /v1/client/live-activities/{id}` → 200 with what its Lock Screen shows (no other user,
///   instance or delivery), `ETag`, 304 on `If-None-Match`; 404 for an unknown id and, alike,
///   for an activity the user is not a user of.
/// - `GET /v1/client/upcoming` → 200 `{"items": [{"type", "at", …}]}`: the user's scheduled and
///   started activities (`"type": "live_activity"`, `at` when it started or starts) and, with polls
///   composed, open polls (`"poll"`, `at` its `closes_at`), in one list soonest first, at most
///   50; `ETag`, 304.
public struct ClientLiveActivityRoutes: Sendable {
    public let service: LiveActivityService
    /// What `GET /v1/client/upcoming` lists beside the activities (open polls), if anything.
    public let upcomingSource: (any ClientUpcomingSource)?

    public init(service: LiveActivityService, upcoming: (any ClientUpcomingSource)? = nil) {
        self.service = service
        self.upcomingSource = upcoming
    }

    /// The routes, behind a client token checked on the headers, before any body is read.
    public var routes: [FeatureRoute] {
        let routes = self
        var client = RouteGroup(
            "/v1/client",
            authentication: .clientToken,
            maxBodySize: LiveActivityLimits.maximumBodyBytes
        )
        client.put("/push-to-start-tokens") { request in
            let claims = try request.clientClaims()
            var input = try LiveActivityInput.parsePushToStart(request.body)
            input.app = input.app ?? claims.app
            let (app, _) = try routes.service.resolve(app: input.app, environment: input.environment)
            try claims.permits(app: app.bundleID)
            return try await LiveActivityRoutes.register(input, user: claims.subject, service: routes.service)
        }
        client.get("/live-activities/{id}") { request in
            let claims = try request.clientClaims()
            let id = try LiveActivityRoutes.id(request)
            let activity = try await routes.service.read(id, userID: claims.subject, app: claims.app)
            return HTTPResponse.json(LiveActivityMemberBody(activity: activity)).conditional(on: request)
        }
        client.get("/upcoming") { request in
            let claims = try request.clientClaims()
            let activities = try await routes.service.upcoming(userID: claims.subject, app: claims.app)
            let limit = LiveActivityStore.upcomingLimit
            var others: [ClientUpcomingItem] = []
            if let source = routes.upcomingSource {
                others = try await source.upcoming(userID: claims.subject, app: claims.app, limit: limit)
            }
            let items = LiveActivityUpcomingBody.merged(
                activities: activities,
                kind: routes.upcomingSource?.kind ?? "",
                others: others,
                limit: limit
            )
            return HTTPResponse.json(LiveActivityUpcomingBody(items: items)).conditional(on: request)
        }
        client.post("/live-activities/{id}/instances") { request in
            let claims = try request.clientClaims()
            let id = try LiveActivityRoutes.id(request)
            let input = try LiveActivityInput.parseInstance(request.body)
            let (instance, created) = try await routes.service.register(
                input,
                for: id,
                userID: claims.subject,
                app: claims.app
            )
            return .json(LiveActivityInstanceBody(instance: instance).json, status: created ? 201 : 200)
        }
        client.describe("PUT", "/push-to-start-tokens", LiveActivityAPI.putToken(client: true))
        client.describe("GET", "/live-activities/{id}", LiveActivityAPI.memberRead)
        client.describe("GET", "/upcoming", LiveActivityAPI.upcoming)
        client.describe("POST", "/live-activities/{id}/instances", LiveActivityAPI.clientInstance)
        return client.routes
    }
}
