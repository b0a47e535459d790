import APNs
import ClientTokens
import Foundation
import HTTPRouting
import HeraldCore
public import HeraldFeature

/// The app-facing device routes under `/v1/client`, behind a client token
/// instead of an API key (``Devices/feature``): the user is the token's `sub`.
///
/// - `PUT /v1/client/devices/{token}` → 201 when the device is new to the user (unknown, or
///   registered to another user or to none: it moves to this one), 200 when it was already the
///   user's: the body of `PUT /v1/devices/{token}` without `user_id`; the device is registered for
///   the token's user. A token with an `app` claim registers only devices of that app (the default
///   `app` then), and 403 `wrong_app` otherwise. Tags outside ``tags`` (`HERALD_CLIENT_TAGS`) are
///   403 `tag_not_allowed`. One device past the user's quota evicts the least recently registered
///   (``DeviceStore/maximumDevicesPerUser``).
/// - `GET /v1/client/devices?app=&environment=&limit=&cursor=` → the user's own devices.
/// - `DELETE /v1/client/devices/{token}?app=&environment=` → 204; 404 `not_found` when the user
///   has no such device, the same answer whether another user has it or nobody does.
///
/// Bodies, validation and the device's JSON are those of ``DeviceRoutes``.
public struct ClientDeviceRoutes: Sendable {
    public let service: DeviceService
    /// The tags a client may set.
    public let tags: ClientTagPolicy

    public init(service: DeviceService, tags: ClientTagPolicy = .noTags) {
        self.service = service
        self.tags = tags
    }

    /// The routes, behind a client token checked on the headers, before any body is read; API
    /// keys are not accepted here.
    public var routes: [FeatureRoute] {
        let routes = self
        var client = RouteGroup("/v1/client/devices", authentication: .clientToken)
        client.put("/{token}", maxBodySize: DeviceLimits.maximumBodyBytes) {
            try await routes.put($0, try $0.clientClaims())
        }
        client.describe("PUT", "/{token}", Self.putOperation)
        client.get("", query: Self.listParameters) { try await routes.list($0, try $0.clientClaims()) }
        client.describe("GET", "", Self.listOperation)
        client.delete("/{token}", query: ["app", "environment"]) {
            try await routes.remove($0, try $0.clientClaims())
        }
        client.describe("DELETE", "/{token}", Self.deleteOperation)
        // The access log shows the device token shortened, as the relay's does.
        client.logPaths(of: "/{token}") { request in
            let prefix = "/v1/client/devices/"
            let token = request.rawPath.hasPrefix(prefix) ? String(request.rawPath.dropFirst(prefix.count)) : ""
            return prefix + APNSDeviceToken.shortened(token)
        }
        return client.routes
    }

    /// The query parameters of `GET /v1/client/devices`.
    static let listParameters = ["app", "environment"] + Paging.parameters

    // MARK: Handlers

    func put(_ request: HTTPRequest, _ claims: ClientTokenClaims) async throws -> HTTPResponse {
        let token = try DeviceRoutes.token(request)
        var input = try DeviceInput.parse(request.body, allowUserID: false, tagPolicy: tags)
        input.app = input.app ?? claims.app
        let (app, _) = try service.resolve(app: input.app, environment: input.environment)
        try claims.permits(app: app)
        input.userID = claims.subject
        let result = try await service.register(token: token, input)
        // New to this user whether nobody had it or someone else did: 200 would tell them apart.
        let isNew = result.created || result.previousUserID != claims.subject
        return DeviceBody(result.device).response(status: isNew ? 201 : 200)
    }

    func list(_ request: HTTPRequest, _ claims: ClientTokenClaims) async throws -> HTTPResponse {
        var query = try DeviceRoutes.parseList(request)
        let (app, environment) = try service.resolve(app: query.app ?? claims.app, environment: query.environment)
        try claims.permits(app: app)
        query.userID = claims.subject
        let page = try await service.list(
            app: app,
            environment: environment,
            userID: claims.subject,
            limit: query.limit,
            cursor: query.cursor
        )
        return DeviceBody.page(page.items, nextCursor: page.nextCursor)
    }

    func remove(_ request: HTTPRequest, _ claims: ClientTokenClaims) async throws -> HTTPResponse {
        let token = try DeviceRoutes.token(request)
        let (requestedApp, requestedEnvironment) = try DeviceRoutes.scope(request)
        let (app, environment) = try service.resolve(app: requestedApp ?? claims.app, environment: requestedEnvironment)
        try claims.permits(app: app)
        // One statement conditioned on the user: another user's device answers as an unknown one.
        try await service.delete(token: token, app: app, environment: environment, ownedBy: claims.subject)
        return HTTPResponse(status: 204)
    }
}
