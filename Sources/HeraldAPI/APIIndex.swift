public import HTTPRouting
import HeraldCore
public import HeraldFeature

/// `GET /v1` (no credential): every `/v1` operation the composed features serve, with the
/// credential each takes, how lists and errors look and where the OpenAPI description is, so that
/// a client finds its way from the API's root; and `GET /v1/openapi.json`, that description
/// (``HeraldFeature/OpenAPIDocument``). Made once, from the routes as registered; each answer is
/// the same bytes every time.
public struct APIIndex: Sendable {
    public let operations: [RouteSummary]
    public let openAPI: OpenAPIDocument

    /// The path of the OpenAPI description.
    public static let openAPIPath = "/v1/openapi.json"

    /// - Throws: ``HeraldFeature/FeatureError`` naming every `/v1` route the description lacks or
    ///   gets wrong (``HeraldFeature/OpenAPIDocument/problems``): a route without a schema stops
    ///   start-up, and with it every test that composes Herald.
    public init(_ routes: [RouteSummary]) throws(FeatureError) {
        operations = routes.filter { $0.pattern == "/v1" || $0.pattern.hasPrefix("/v1/") }
            .sorted { ($0.pattern, $0.method) < ($1.pattern, $1.method) }
        openAPI = OpenAPIDocument(operations, version: HeraldVersion.string)
        if !openAPI.problems.isEmpty { throw FeatureError(openAPI.problems.joined(separator: "; ")) }
    }

    /// The credential as the index names it.
    static func name(_ authentication: FeatureRoute.Authentication) -> String {
        switch authentication {
        case .apiKey: "api_key"
        case .clientToken: "client_token"
        case .apiKeyOrClientToken: "api_key_or_client_token"
        case .none: "none"
        }
    }

    public var response: HTTPResponse {
        let operations: [JSONValue] = operations.map { route in
            [
                "method": .string(route.method),
                "path": .string(route.pattern),
                "authentication": .string(Self.name(route.authentication)),
                "feature": .string(route.feature),
            ]
        }
        return .json([
            "openapi": .string(Self.openAPIPath),
            "operations": .array(operations),
            "authentication": [
                "api_key": "Authorization: Bearer <one of HERALD_API_KEYS>",
                "client_token": "Authorization: Bearer <a client token your backend minted for the user>",
            ],
            "paging": [
                "limit": .string("1 to \(Paging.maximumLimit), \(Paging.defaultLimit) when left out"),
                "cursor": "the previous page's next_cursor",
                "next_cursor": "always present, null on the last page",
            ],
            "errors": #"{"error": {"code", "message", "field"?}}: code for programs, message says what to fix"#,
        ])
    }

    /// Adds `GET /v1` (and `HEAD`) answering the index, without a credential, and has every 404
    /// point at it.
    public func register(on router: inout Router) {
        let response = response
        router.get("/v1") { _ in response }
        let description = HTTPResponse.json(openAPI.json)
        router.get(Self.openAPIPath) { _ in description }
        router.notFoundHint = "GET /v1 lists every operation"
    }
}
