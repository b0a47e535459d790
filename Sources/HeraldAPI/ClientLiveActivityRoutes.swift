import APNs
import ClientTokens
import Foundation
public import HTTPRouting
import HeraldCore
import HeraldFeature
public import LiveActivities

/// The app-facing Live Activities routes under `/v1/client`, behind a client token (the
/// admission check ``ClientDeviceRoutes`` registers for `/v1/client`); the user is the token's `sub`:
///
/// - `PUT /v1/client/push-to-start-tokens` `{"app"?, "environment"?, "attributes_type", "token"}` →
///   201 when new to the user (also when it was another user's: no answer tells whether a token is
///   known), 200 when the user had it; past `HERALD_CLIENT_MAX_DEVICES` the user's least recently
///   registered one is evicted.
/// - `POST /v1/client/live-activities/{id}/instances` `{"activity_id", "device_token"?,
///   "update_token"?, "state"?}` → 201/200; 404 `not_found` for an unknown id and, with the same
///   body, for an activity the user is not a user of; 403 `not_your_instance` for an instance
///   another user reported first; 409 `too_many_instances` past `HERALD_MAX_INSTANCES_PER_USER`.
public struct ClientLiveActivityRoutes: Sendable {
    public let service: LiveActivityService
    public let authenticator: ClientTokenAuthenticator

    public init(service: LiveActivityService, authenticator: ClientTokenAuthenticator) {
        self.service = service
        self.authenticator = authenticator
    }

    public func register(on router: inout Router) {
        let routes = self
        router.on("PUT", "/v1/client/push-to-start-tokens", maxBodySize: LiveActivityLimits.maximumBodyBytes) {
            request in
            try await routes.authenticated(request, "PUT /v1/client/push-to-start-tokens") { request, claims in
                var input = try LiveActivityInput.parsePushToStart(request.body)
                input.app = input.app ?? claims.app
                let (app, _) = try routes.service.resolve(app: input.app, environment: input.environment)
                try claims.permits(app: app.bundleID)
                return try await LiveActivityRoutes.register(input, user: claims.subject, service: routes.service)
            }
        }
        router.on(
            "POST",
            "/v1/client/live-activities/{id}/instances",
            maxBodySize: LiveActivityLimits.maximumBodyBytes
        ) { request in
            try await routes.authenticated(request, "POST /v1/client/live-activities/{id}/instances") {
                request,
                claims in
                let id = try LiveActivityRoutes.id(request)
                let input = try LiveActivityInput.parseInstance(request.body)
                let (instance, created) = try await routes.service.register(
                    input,
                    for: id,
                    userID: claims.subject,
                    app: claims.app
                )
                return .json(LiveActivityInstanceBody(instance: instance), status: created ? 201 : 200)
            }
        }
    }

    private func authenticated(
        _ request: HTTPRequest,
        _ route: String,
        _ body: (HTTPRequest, ClientTokenClaims) async throws -> HTTPResponse
    ) async throws -> HTTPResponse {
        let claims = try authenticator.authenticate(request)
        try request.rejectUnknownQueryParameters([], route: route)
        try request.requireJSONContentType()
        do {
            return try await body(request, claims)
        } catch let error as LiveActivityError {
            return error.response
        } catch let error as ClientTokenError {
            return ClientTokenAuthenticator.httpError(error).response
        }
    }
}
