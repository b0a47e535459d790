public import HTTPRouting

/// One route of a feature: method, path pattern, the authentication it needs and its handler.
///
/// The feature declares what the request needs; ``FeatureAssembly`` does it the same way for
/// every feature: checks the credential (before the body is read), the query parameters and the
/// body's media type, runs the handler under `Idempotency-Key` when ``idempotent``, and answers a
/// ``DomainErrorResponse`` the handler throws (a ``HeraldCore/Refusal``) with its status.
///
/// A raw route (``raw(_:_:maxBodySize:admission:answering:)``) skips all of that: its handler is
/// the router's own kind, added as it is, for a wire contract of its own (the relay's).
public struct FeatureRoute: Sendable {
    /// The credential a route takes.
    public enum Authentication: Sendable, Hashable, CustomStringConvertible {
        /// `Authorization: Bearer <key>` with one of `HERALD_API_KEYS` (the app's backend).
        case apiKey
        /// A client token the app's backend minted for a user (the app itself, `/v1/client`).
        case clientToken
        /// Either: the backend's API key, or a user's client token for what that user may do
        /// there too (the host of a poll finalizing it). The handler tells them apart by
        /// ``HTTPRouting/HTTPRequest/principal``: a client token's claims, or `nil` for the key.
        case apiKeyOrClientToken
        /// None: public (health, metrics with their own token, the relay).
        case none

        public var description: String {
            switch self {
            case .apiKey: "API key"
            case .clientToken: "client token"
            case .apiKeyOrClientToken: "API key or client token"
            case .none: "none"
            }
        }
    }

    public var method: String
    /// `/literal/{parameter}/…`, as ``HTTPRouting/Router`` reads it.
    public var pattern: String
    public var authentication: Authentication
    /// The query parameters the route knows (others are 400 `unknown_parameter`); `nil`: the
    /// query is not checked.
    public var query: [String]?
    /// The largest body, when the route's differs from the server's.
    public var maxBodySize: Int?
    /// Whether a retried request with the same `Idempotency-Key` answers the first response
    /// instead of running again (for routes that create something).
    public var idempotent: Bool
    /// How the route is answered.
    public var handling: Handling
    /// A check of the route's own, run on the request line and headers of every request to
    /// ``pattern`` or under it, whatever its method, before the body is read (after the
    /// authentication's): a per-address limit, say. `nil`: none.
    public var admission: Router.AdmissionCheck?
    /// How the access log shows this route's paths (a device token shortened, say); `nil`: as
    /// received.
    public var loggedPath: (@Sendable (HTTPRequest) -> String)?
    /// What the API description says of it (`GET /v1/openapi.json`); every `/v1` route has one.
    public var operation: APIOperation?
    /// The media type the body must be sent as (415 otherwise).
    public var bodyFormat: BodyFormat = .json

    /// A body's media type.
    public enum BodyFormat: Sendable, Hashable {
        /// `application/json` (every `/v1` route).
        case json
        /// `application/x-www-form-urlencoded`: an HTML form's (the admin console's).
        case form
    }

    public init(
        _ method: String,
        _ pattern: String,
        authentication: Authentication,
        query: [String]? = [],
        maxBodySize: Int? = nil,
        idempotent: Bool = false,
        handler: @escaping Router.Handler
    ) {
        self.method = method.uppercased()
        self.pattern = pattern
        self.authentication = authentication
        self.query = query
        self.maxBodySize = maxBodySize
        self.idempotent = idempotent
        self.handling = .api(handler)
    }

    private init(_ method: String, _ pattern: String, maxBodySize: Int?, raw handler: @escaping Router.Answering) {
        self.method = method.uppercased()
        self.pattern = pattern
        self.authentication = .none
        self.query = nil
        self.maxBodySize = maxBodySize
        self.idempotent = false
        self.handling = .raw(handler)
    }

    /// How a route is answered.
    public enum Handling: Sendable {
        /// Behind the shared machinery (authentication, query, media type, `Idempotency-Key`,
        /// refusals), from a task.
        case api(Router.Handler)
        /// As it is (``FeatureRoute/raw(_:_:maxBodySize:admission:answering:)``).
        case raw(Router.Answering)
    }

    /// A raw route: `handler` is added to the router as it is, the router's one handler kind,
    /// called on the server's I/O thread with a one-shot ``HTTPRouting/HTTPResponseSink``. Nothing
    /// runs between the router and it: no credential (its authentication is `.none`), no query or
    /// media-type check, no `Idempotency-Key`, no refusal mapping, no task hop. For a route with a
    /// wire contract of its own whose speed matters (the relay's `POST /push/{token}/{id}`).
    ///
    /// - Parameters:
    ///   - maxBodySize: the route's body limit, when it differs from the server's.
    ///   - admission: ``admission``.
    ///   - handler: must not block; answers exactly once, from any thread.
    public static func raw(
        _ method: String,
        _ pattern: String,
        maxBodySize: Int? = nil,
        admission: Router.AdmissionCheck? = nil,
        answering handler: @escaping Router.Answering
    ) -> FeatureRoute {
        var route = FeatureRoute(method, pattern, maxBodySize: maxBodySize, raw: handler)
        route.admission = admission
        return route
    }

    /// `POST /v1/channels`: how messages name the route.
    public var name: String { "\(method) \(pattern)" }
}

/// Routes under one path prefix that share an authentication and a body limit.
///
/// ```swift
/// var group = RouteGroup("/v1/channels", authentication: .apiKey, maxBodySize: 16 * 1024)
/// group.post("", idempotent: true) { request in try await create(request) }
/// group.get("/{id}", query: ["app", "environment"]) { request in try await read(request) }
/// return group.routes
/// ```
public struct RouteGroup: Sendable {
    public let prefix: String
    public let authentication: FeatureRoute.Authentication
    public let maxBodySize: Int?
    /// The routes added so far, in order.
    public private(set) var routes: [FeatureRoute] = []

    public init(_ prefix: String, authentication: FeatureRoute.Authentication, maxBodySize: Int? = nil) {
        self.prefix = prefix
        self.authentication = authentication
        self.maxBodySize = maxBodySize
    }

    /// Adds `method` at `prefix + path` (`path` empty for the prefix itself).
    ///
    /// - Parameter maxBodySize: this route's body limit instead of the group's (GET and DELETE
    ///   take the server's unless given one).
    public mutating func on(
        _ method: String,
        _ path: String,
        query: [String]? = [],
        maxBodySize: Int? = nil,
        idempotent: Bool = false,
        _ handler: @escaping Router.Handler
    ) {
        let bodiless = method.uppercased() == "GET" || method.uppercased() == "DELETE"
        routes.append(
            FeatureRoute(
                method,
                prefix + path,
                authentication: authentication,
                query: query,
                maxBodySize: maxBodySize ?? (bodiless ? nil : self.maxBodySize),
                idempotent: idempotent,
                handler: handler
            )
        )
    }

    /// Has the access log show the paths of the routes at `path` (under ``prefix``) as
    /// `transform` writes them: a secret in the path, such as a device token, shortened.
    public mutating func logPaths(of path: String, as transform: @escaping @Sendable (HTTPRequest) -> String) {
        for index in routes.indices where routes[index].pattern == prefix + path {
            routes[index].loggedPath = transform
        }
    }

    /// Describes the route `method` at `path` (under ``prefix``) for the API description.
    public mutating func describe(_ method: String, _ path: String, _ operation: APIOperation) {
        let method = method.uppercased()
        for index in routes.indices where routes[index].method == method && routes[index].pattern == prefix + path {
            routes[index].operation = operation
        }
    }

    public mutating func get(_ path: String, query: [String]? = [], _ handler: @escaping Router.Handler) {
        on("GET", path, query: query, handler)
    }

    public mutating func post(
        _ path: String,
        query: [String]? = [],
        maxBodySize: Int? = nil,
        idempotent: Bool = false,
        _ handler: @escaping Router.Handler
    ) {
        on("POST", path, query: query, maxBodySize: maxBodySize, idempotent: idempotent, handler)
    }

    public mutating func put(
        _ path: String,
        query: [String]? = [],
        maxBodySize: Int? = nil,
        _ handler: @escaping Router.Handler
    ) {
        on("PUT", path, query: query, maxBodySize: maxBodySize, handler)
    }

    public mutating func delete(_ path: String, query: [String]? = [], _ handler: @escaping Router.Handler) {
        on("DELETE", path, query: query, handler)
    }
}
