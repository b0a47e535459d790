public import HTTPRouting
public import HeraldCore
public import Storage

/// Checks a request's credential for the routes that declare one kind of
/// ``FeatureRoute/Authentication``: HeraldAPI's `APIKeys` for `.apiKey`, its
/// `ClientTokenAuthenticator` for `.clientToken`, its `APIKeyOrClientToken` for
/// `.apiKeyOrClientToken`.
public protocol RequestAuthenticator: Sendable {
    /// Run once per request, on the request line and headers before the body is read
    /// (``HTTPRouting/Router/admit(under:_:)``): a refusal is sent without reading the body; an
    /// admitted request carries who it comes from (a client token's claims) as
    /// ``HTTPRouting/HTTPRequest/principal`` to the handler, which does not check again.
    var admission: Router.AdmissionCheck { get }
}

/// Runs a handler once per `Idempotency-Key` (HeraldAPI's `IdempotencyStore`).
public protocol IdempotentRunner: Sendable {
    func run(
        _ request: HTTPRequest,
        _ handler: (HTTPRequest) async throws -> HTTPResponse
    ) async throws -> HTTPResponse
}

/// The request machinery every feature's routes share, kept in one place (HeraldAPI) and handed to
/// ``FeatureAssembly/register(on:context:machinery:)``.
public struct RequestMachinery: Sendable {
    /// The authenticator of each kind of credential; a route whose kind has none stops start-up.
    public var authenticators: [FeatureRoute.Authentication: any RequestAuthenticator]
    /// `nil`: `Idempotency-Key` is ignored.
    public var idempotency: (any IdempotentRunner)?

    public init(
        authenticators: [FeatureRoute.Authentication: any RequestAuthenticator] = [:],
        idempotency: (any IdempotentRunner)? = nil
    ) {
        self.authenticators = authenticators
        self.idempotency = idempotency
    }
}

/// A list of features composed for `herald serve`: their settings after the core's (the
/// configuration reference), their migrations after the core's (the schema), their routes on one
/// router with the shared request machinery.
public struct FeatureAssembly: Sendable {
    public let features: [HeraldFeature]
    /// The settings no feature owns (the server, logging, the database, API keys, APNs, …).
    public let coreSettings: [Setting]
    /// The migrations no feature owns, in their order.
    public let coreMigrations: [Migration]

    public init(coreSettings: [Setting], coreMigrations: [Migration], features: [HeraldFeature]) {
        self.coreSettings = coreSettings
        self.coreMigrations = coreMigrations
        self.features = features
    }

    /// Every setting: the core's, then each feature's in the list's order.
    public var settings: [Setting] {
        coreSettings + features.flatMap(\.settings)
    }

    /// Every migration: the core's, then each feature's. The migrator applies the released ones
    /// in their old order, then the later ones module by module in this order.
    public var migrations: [Migration] {
        coreMigrations + features.flatMap(\.migrations)
    }

    /// Who declares each setting: `core` or the feature's name, once per declaration.
    public var settingOwners: [(setting: Setting, owner: String)] {
        coreSettings.map { ($0, "core") } + features.flatMap { feature in feature.settings.map { ($0, feature.name) } }
    }

    /// Every feature's problems with its settings (``HeraldFeature/checkSettings``), in the
    /// list's order: `context` carries the environment, the required features and whether APNs
    /// is configured, no services.
    public func settingsProblems(context: FeatureContext) -> [String] {
        features.flatMap { $0.checkSettings(context) }
    }

    /// Refuses a list in which two declarations collide: a feature name, a setting, a migration
    /// declared twice or a feature's migration of another module, or a job kind declared twice.
    public func validate() throws(FeatureError) {
        var problems: [String] = []
        func duplicates<Key: Hashable>(_ pairs: [(Key, String)], _ what: String) {
            var seen: [Key: String] = [:]
            for (key, owner) in pairs {
                if let first = seen[key] {
                    problems.append("\(what) \(key) is declared by both \(first) and \(owner)")
                } else {
                    seen[key] = owner
                }
            }
        }
        duplicates(features.map { ($0.name, $0.name) }, "the feature")
        duplicates(settingOwners.map { ($0.setting.name, $0.owner) }, "the setting")
        duplicates(
            coreMigrations.map { ($0.id, "core") }
                + features.flatMap { feature in feature.migrations.map { ($0.id, feature.name) } },
            "the migration"
        )
        for feature in features {
            for migration in feature.migrations where migration.module != feature.name {
                problems.append(
                    "the feature \(feature.name) declares migration \(migration.id); "
                        + "a feature's migrations are of its own module (\(feature.name))"
                )
            }
        }
        duplicates(features.flatMap { feature in feature.jobKinds.map { ($0, feature.name) } }, "the job kind")
        if !problems.isEmpty { throw FeatureError(problems.joined(separator: "; ")) }
    }

    /// Builds every feature's routes from `context` and adds them to `router`, each behind the
    /// authentication it declares; a raw route (``FeatureRoute/Handling/raw(_:)``) as it is, with
    /// only its own ``FeatureRoute/admission``.
    ///
    /// - Returns: every route registered, in the list's order, as ``RouteSummary`` values (the
    ///   index of `GET /v1`).
    /// - Throws: ``FeatureError`` when a feature cannot build its routes, a route needs an
    ///   authenticator `machinery` lacks, or two routes share a method and pattern.
    @discardableResult
    public func register(
        on router: inout Router,
        context: FeatureContext,
        machinery: RequestMachinery
    ) throws(FeatureError) -> [RouteSummary] {
        var summaries: [RouteSummary] = []
        var declared: [String: String] = [:]
        // Routes' own checks (``FeatureRoute/admission``), after the credentials'.
        var ownChecks: [(pattern: String, check: Router.AdmissionCheck)] = []
        for feature in features {
            let routes: [FeatureRoute]
            do {
                routes = try feature.routes(context)
            } catch {
                throw FeatureError("\(feature.name) cannot build its routes: \(error)")
            }
            for route in routes {
                if let other = declared[route.name] {
                    throw FeatureError("\(route.name) is declared by both \(other) and \(feature.name)")
                }
                declared[route.name] = feature.name
                summaries.append(RouteSummary(route, feature: feature.name))
                if route.authentication != .none {
                    guard let authenticator = machinery.authenticators[route.authentication] else {
                        throw FeatureError(
                            "\(feature.name)'s \(route.name) needs a \(route.authentication) authenticator, "
                                + "and none was given"
                        )
                    }
                    // On this route only: a route under another's path may take another credential,
                    // and each request's credential is checked once (a rate limit counts it once).
                    router.admit(route.method, route.pattern, authenticator.admission)
                }
                switch route.handling {
                case .api(let handler):
                    let handler = Self.handler(route, handler, idempotency: machinery.idempotency)
                    if let maxBodySize = route.maxBodySize {
                        router.on(route.method, route.pattern, maxBodySize: maxBodySize, handler)
                    } else {
                        router.on(route.method, route.pattern, handler)
                    }
                case .raw(let handler):
                    // As it is: nothing between the router and the handler.
                    router.on(route.method, route.pattern, maxBodySize: route.maxBodySize, answering: handler)
                }
                if let loggedPath = route.loggedPath { router.logPaths(of: route.pattern, as: loggedPath) }
                if let admission = route.admission { ownChecks.append((route.pattern, admission)) }
            }
        }
        for (pattern, check) in ownChecks { router.admit(under: pattern, check) }
        return summaries
    }

    /// The route's handler behind the shared machinery: the query, the media type,
    /// `Idempotency-Key`, and a ``DomainErrorResponse`` answered with its own status. The
    /// credential was checked by the route's admission, before the body was read.
    static func handler(
        _ route: FeatureRoute,
        _ handler: @escaping Router.Handler,
        idempotency: (any IdempotentRunner)?
    ) -> Router.Handler {
        let name = route.name
        let query = route.query
        let bodyFormat = route.bodyFormat
        let idempotency = route.idempotent ? idempotency : nil
        return { request in
            if let query { try request.rejectUnknownQueryParameters(query, route: name) }
            switch bodyFormat {
            case .json: try request.requireJSONContentType()
            case .form: try request.requireFormContentType()
            }
            do {
                guard let idempotency else { return try await handler(request) }
                return try await idempotency.run(request) { try await handler($0) }
            } catch let error as any DomainErrorResponse {
                return error.response
            }
        }
    }
}

extension Router {
    /// Adds `routes` behind `machinery` as ``FeatureAssembly`` adds a feature's: for a test or a
    /// tool that serves one feature's routes without the feature list.
    ///
    /// - Throws: ``FeatureError`` when a route needs an authenticator `machinery` lacks or two
    ///   routes share a method and pattern.
    public mutating func register(_ routes: [FeatureRoute], machinery: RequestMachinery) throws(FeatureError) {
        let feature = HeraldFeature(name: "routes") { _ in routes }
        try FeatureAssembly(coreSettings: [], coreMigrations: [], features: [feature]).register(
            on: &self,
            context: FeatureContext(environment: [:], logger: Logger(label: "herald")),
            machinery: machinery
        )
    }
}

/// A registered route as an index and the API description show it: method, path pattern, the
/// credential it takes, its query parameters and description, and the feature that declared it.
public struct RouteSummary: Sendable {
    public var method: String
    public var pattern: String
    public var authentication: FeatureRoute.Authentication
    public var feature: String
    /// The query parameters it knows; `nil`: not checked.
    public var query: [String]?
    /// Whether it takes `Idempotency-Key`.
    public var idempotent: Bool
    public var operation: APIOperation?

    public init(_ route: FeatureRoute, feature: String) {
        method = route.method
        pattern = route.pattern
        authentication = route.authentication
        self.feature = feature
        query = route.query
        idempotent = route.idempotent
        operation = route.operation
    }
}
