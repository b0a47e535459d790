public import HTTPRouting
import HeraldCore
public import HeraldFeature

/// `GET /v1` (no credential): every `/v1` operation the composed features serve, with the
/// credential each takes, and how lists and errors look, so that a client finds its way from the
/// API's root. Made once, from the routes as registered; the answer is the same bytes every time.
public struct APIIndex: Sendable {
    public let operations: [RouteSummary]

    public init(_ routes: [RouteSummary]) {
        operations = routes.filter { $0.pattern == "/v1" || $0.pattern.hasPrefix("/v1/") }
            .sorted { ($0.pattern, $0.method) < ($1.pattern, $1.method) }
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
        router.notFoundHint = "GET /v1 lists every operation"
    }
}
