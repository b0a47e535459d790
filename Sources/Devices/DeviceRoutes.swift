public import APNs
import Foundation
public import HTTPRouting
public import HeraldCore
public import HeraldFeature

/// The device registry's API under `/v1`, behind an API key (``Devices/feature``):
///
/// - `PUT /v1/devices/{token}` → 201 when created, 200 when updated, with the device. The body
///   replaces the device's metadata: a field left out is cleared.
/// - `GET /v1/devices/{token}?app=&environment=` → the device; `DELETE` the same → 204.
/// - `GET /v1/devices?app=&environment=&user_id=&tag=&status=&limit=&cursor=` → in token order,
///   keyset-paged.
/// - `POST /v1/devices/batch` `{"devices": [{"token", …}]}` (1 to 1,000) → 200 with one answer
///   per device, stored in one transaction.
///
/// `app` and `environment` default as in `/v1/notifications`. Input is strict, as there. The API
/// key sets any tag; a registration with a `user_id` counts toward that user's quota (one active
/// device past ``DeviceStore/maximumDevicesPerUser`` evicts the least recently registered), and
/// one that moves a token to another user is a `device.reassigned` event, as on `/v1/client`.
public struct DeviceRoutes: Sendable {
    public let service: DeviceService

    public init(service: DeviceService) {
        self.service = service
    }

    /// The query parameters of `GET /v1/devices`.
    static let listParameters = ["app", "environment", "user_id", "tag", "status", "token_prefix"] + Paging.parameters

    /// The five routes, behind an API key.
    public var routes: [FeatureRoute] {
        let routes = self
        let scope = ["app", "environment"]
        var group = RouteGroup("/v1/devices", authentication: .apiKey)
        group.put("/{token}", maxBodySize: DeviceLimits.maximumBodyBytes) { try await routes.put($0) }
        group.describe("PUT", "/{token}", Self.putOperation)
        group.get("/{token}", query: scope) { try await routes.read($0) }
        group.describe("GET", "/{token}", Self.readOperation)
        group.delete("/{token}", query: scope) { try await routes.remove($0) }
        group.describe("DELETE", "/{token}", Self.deleteOperation)
        group.get("", query: Self.listParameters) { try await routes.list($0) }
        group.describe("GET", "", Self.listOperation)
        group.post("/batch", maxBodySize: DeviceLimits.maximumBatchBodyBytes) { try await routes.batch($0) }
        group.describe("POST", "/batch", Self.batchOperation)
        return group.routes
    }

    // MARK: Handlers

    func put(_ request: HTTPRequest) async throws -> HTTPResponse {
        let token = try Self.token(request)
        let input = try DeviceInput.parse(request.body)
        let result = try await service.register(token: token, input)
        return DeviceBody(result.device).response(status: result.created ? 201 : 200)
    }

    func read(_ request: HTTPRequest) async throws -> HTTPResponse {
        let token = try Self.token(request)
        let (app, environment) = try Self.scope(request)
        return DeviceBody(try await service.device(token: token, app: app, environment: environment)).response()
    }

    func remove(_ request: HTTPRequest) async throws -> HTTPResponse {
        let token = try Self.token(request)
        let (app, environment) = try Self.scope(request)
        try await service.delete(token: token, app: app, environment: environment)
        return HTTPResponse(status: 204)
    }

    func list(_ request: HTTPRequest) async throws -> HTTPResponse {
        let query = try Self.parseList(request)
        let page = try await service.list(
            app: query.app,
            environment: query.environment,
            userID: query.userID,
            tag: query.tag,
            status: query.status,
            tokenPrefix: query.tokenPrefix,
            limit: query.limit,
            cursor: query.cursor
        )
        return DeviceBody.page(page.items, nextCursor: page.nextCursor)
    }

    func batch(_ request: HTTPRequest) async throws -> HTTPResponse {
        let entries = try DeviceBatch.parse(request.body)
        let outcomes = try await service.register(batch: entries)
        return BatchBody(outcomes).response
    }

    // MARK: Parsing

    /// The path's token, checked as `/v1/notifications` checks tokens (400 `invalid_token`).
    public static func token(_ request: HTTPRequest) throws(DeviceError) -> String {
        try DeviceInput.token(request.parameters["token"] ?? "", field: "token")
    }

    /// The `app` and `environment` query parameters, unresolved.
    public static func scope(_ request: HTTPRequest) throws(HTTPError) -> (String?, APNSEnvironment?) {
        (try app(request), try request.environmentFilter())
    }

    /// The query of `GET /v1/devices`, checked.
    public struct ListQuery: Sendable {
        public var app: String?
        public var environment: APNSEnvironment?
        public var userID: String?
        public var tag: String?
        public var status: DeviceStatus?
        /// Lowercase hexadecimal, 1 to 200 digits.
        public var tokenPrefix: String?
        public var limit: Int
        public var cursor: String?
    }

    /// `GET /v1/devices`: every query parameter range-checked (400 naming it).
    public static func parseList(_ request: HTTPRequest) throws(HTTPError) -> ListQuery {
        let (app, environment) = try scope(request)
        let userID = request.queryValue("user_id")
        if let userID, userID.isEmpty || userID.utf8.count > DeviceLimits.maximumNameBytes {
            throw HTTPError(
                status: 400,
                code: "invalid_user_id",
                message: "user_id must be 1 to \(DeviceLimits.maximumNameBytes) bytes",
                field: "user_id"
            )
        }
        let tag = request.queryValue("tag")
        if let tag, !(1...DeviceLimits.maximumTagCharacters).contains(tag.count) {
            throw HTTPError(
                status: 400,
                code: "invalid_tag",
                message: "tag must be 1 to \(DeviceLimits.maximumTagCharacters) characters",
                field: "tag"
            )
        }
        var status: DeviceStatus?
        if let name = request.queryValue("status") {
            guard let parsed = DeviceStatus(rawValue: name) else {
                throw HTTPError(
                    status: 400,
                    code: "invalid_status",
                    message: "status must be active or invalid",
                    field: "status"
                )
            }
            status = parsed
        }
        let tokenPrefix = request.queryValue("token_prefix")?.lowercased()
        if let tokenPrefix,
            !(1...200).contains(tokenPrefix.utf8.count)
                || !tokenPrefix.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        {
            throw HTTPError(
                status: 400,
                code: "invalid_token_prefix",
                message: "token_prefix must be 1 to 200 hexadecimal digits: the start of a device token",
                field: "token_prefix"
            )
        }
        let cursor = request.queryValue("cursor")
        if let cursor, (try? APNSDeviceToken.normalized(cursor)) != cursor { throw Paging.invalidCursor() }
        return ListQuery(
            app: app,
            environment: environment,
            userID: userID,
            tag: tag,
            status: status,
            tokenPrefix: tokenPrefix,
            limit: try request.pageLimit(),
            cursor: cursor
        )
    }

    /// The `app` query parameter, as `/v1/notifications` reads it: 400 `invalid_app` when empty or
    /// too long.
    static func app(_ request: HTTPRequest) throws(HTTPError) -> String? {
        try request.appFilter(maximumBytes: DeviceLimits.maximumNameBytes)
    }
}

extension HTTPRequest {
    /// The `environment` query parameter of a listing: `nil` when absent.
    ///
    /// - Throws: ``HTTPError`` 400 `invalid_environment` when it is neither `production` nor `sandbox`.
    public func environmentFilter() throws(HTTPError) -> APNSEnvironment? {
        guard let name = queryValue("environment") else { return nil }
        guard name == "production" || name == "sandbox" else {
            throw HTTPError(
                status: 400,
                code: "invalid_environment",
                message: "environment must be production or sandbox",
                field: "environment"
            )
        }
        return APNSEnvironment(rawValue: name)
    }
}
