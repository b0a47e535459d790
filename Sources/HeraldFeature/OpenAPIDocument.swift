public import HeraldCore

/// The OpenAPI 3.1 description of the `/v1` routes, generated from their own declarations
/// (``RouteSummary``): method and path, the credential, the query parameters and
/// `Idempotency-Key` as the route declares them, and what its ``APIOperation`` says. Every
/// operation answers errors in the one format (`Error`) under `default`.
public struct OpenAPIDocument: Sendable {
    /// The document.
    public let json: JSONValue
    /// What is missing or contradicts itself: a `/v1` route without a description, without a
    /// success answer, or reading a body without its schema; one schema name standing for two
    /// schemas. `herald serve` refuses to start with any.
    public let problems: [String]

    public init(_ routes: [RouteSummary], version: String) {
        var problems: [String] = []
        var components: [String: JSONValue] = ["Error": Self.errorSchema]
        var paths: [String: [String: JSONValue]] = [:]
        let described = Set(
            routes.filter { $0.operation != nil }.map { "\($0.method) \($0.pattern)" }
        )
        for route in routes where route.pattern == "/v1" || route.pattern.hasPrefix("/v1/") {
            let name = "\(route.method) \(route.pattern)"
            guard let operation = route.operation else {
                problems.append("\(name) has no APIOperation: describe it (RouteGroup.describe) for /v1/openapi.json")
                continue
            }
            if !operation.responses.keys.contains(where: { (200..<400).contains($0) }) {
                problems.append("\(name) declares no success answer")
            }
            let readsBody = ["POST", "PUT", "PATCH"].contains(route.method)
            if readsBody, operation.request?.schema == nil {
                problems.append("\(name) reads a body and declares no request schema")
            }
            for link in operation.responses.values.flatMap(\.links) where !described.contains(link.operation) {
                problems.append("\(name) links to \(link.operation), which is not a described route")
            }
            var object = Self.operation(route, operation)
            object = Self.extractingNamed(object, into: &components, problems: &problems)
            paths[route.pattern, default: [:]][route.method.lowercased()] = object
        }
        json = [
            "openapi": "3.1.0",
            "info": [
                "title": "Herald",
                "version": .string(version),
                "description": .string(Self.description),
            ],
            "servers": [["url": "/"]],
            "paths": .object(paths.mapValues { .object($0) }),
            "components": [
                "schemas": .object(components),
                "securitySchemes": [
                    "apiKey": [
                        "type": "http", "scheme": "bearer",
                        "description": "One of the keys in HERALD_API_KEYS: your backend.",
                    ],
                    "clientToken": [
                        "type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                        "description": "A client token your backend minted for one user (its sub): the app.",
                    ],
                ],
            ],
        ]
        self.problems = problems
    }

    static let description = """
        Herald's API. Every list pages with limit (1 to 1000, 100 when left out) and cursor (the \
        previous page's next_cursor); next_cursor is always present, null on the last page. Every \
        error is {"error": {"code", "message", "field"?}}: code for programs, message says what to fix.
        """

    static let errorSchema: JSONValue = APISchema.object([
        "error": APISchema.object(
            [
                "code": APISchema.string(description: "What went wrong, for programs: not_found, unknown_field, …"),
                "message": APISchema.string(description: "What to fix, for people."),
                "field": APISchema.string(description: "The part of the request at fault, when one is."),
            ],
            required: ["code", "message"]
        )
    ])

    static let errorExample: JSONValue = [
        "error": [
            "code": "unknown_field",
            "message": "colour is not a field of this body: remove it (the fields are …)",
            "field": "colour",
        ]
    ]

    /// One operation object.
    static func operation(_ route: RouteSummary, _ operation: APIOperation) -> JSONValue {
        var object: [String: JSONValue] = [
            "operationId": .string(operationID(route)),
            "summary": .string(operation.summary),
            "tags": [.string(route.feature)],
            "security": .array(security(route.authentication)),
        ]
        if let description = operation.description { object["description"] = .string(description) }
        var parameters: [JSONValue] = []
        for segment in route.pattern.split(separator: "/") where segment.hasPrefix("{") && segment.hasSuffix("}") {
            let name = String(segment.dropFirst().dropLast())
            let given = operation.parameters[name]
            parameters.append([
                "name": .string(name), "in": "path", "required": true,
                "description": .string(given?.description ?? name),
                "schema": given?.schema ?? APISchema.string,
            ])
        }
        for name in route.query ?? [] {
            let given = operation.parameters[name] ?? knownQuery[name]
            parameters.append([
                "name": .string(name), "in": "query", "required": false,
                "description": .string(given?.description ?? name),
                "schema": given?.schema ?? APISchema.string,
            ])
        }
        if route.idempotent {
            parameters.append([
                "name": "Idempotency-Key", "in": "header", "required": false,
                "description":
                    "A retried request with the same key answers the first response instead of running again.",
                "schema": APISchema.string(maxLength: 255),
            ])
        }
        if !parameters.isEmpty { object["parameters"] = .array(parameters) }
        if let request = operation.request, let schema = request.schema {
            var media: [String: JSONValue] = ["schema": schema]
            if let example = request.example { media["example"] = example }
            object["requestBody"] = [
                "required": true,
                "description": .string(request.description),
                "content": ["application/json": .object(media)],
            ]
        }
        var responses: [String: JSONValue] = [:]
        for (status, body) in operation.responses {
            var response: [String: JSONValue] = ["description": .string(body.description)]
            if let schema = body.schema {
                var media: [String: JSONValue] = ["schema": schema]
                if let example = body.example { media["example"] = example }
                response["content"] = ["application/json": .object(media)]
            }
            if !body.links.isEmpty {
                var links: [String: JSONValue] = [:]
                for link in body.links {
                    let parts = link.operation.split(separator: " ", maxSplits: 1).map(String.init)
                    guard parts.count == 2 else { continue }
                    links[link.name] = [
                        "operationId": .string(operationID(method: parts[0], pattern: parts[1])),
                        "parameters": .object(link.parameters.mapValues(JSONValue.string)),
                    ]
                }
                response["links"] = .object(links)
            }
            responses[String(status)] = .object(response)
        }
        responses["default"] = [
            "description": "An error, in the one format: code, what to fix, the field at fault.",
            "content": [
                "application/json": ["schema": ["$ref": "#/components/schemas/Error"], "example": errorExample]
            ],
        ]
        object["responses"] = .object(responses)
        return .object(object)
    }

    /// The query parameters every list takes.
    static let knownQuery: [String: APIParameter] = [
        "limit": APIParameter("Items per page, 1 to 1000 (100 when left out).", APISchema.integer(1...1_000)),
        "cursor": APIParameter("The previous page's next_cursor, unchanged."),
    ]

    static func security(_ authentication: FeatureRoute.Authentication) -> [JSONValue] {
        switch authentication {
        case .apiKey: [["apiKey": []]]
        case .clientToken: [["clientToken": []]]
        case .apiKeyOrClientToken: [["apiKey": []], ["clientToken": []]]
        case .none: []
        }
    }

    /// `post_v1_polls_id_finalize`.
    static func operationID(_ route: RouteSummary) -> String {
        operationID(method: route.method, pattern: route.pattern)
    }

    static func operationID(method: String, pattern: String) -> String {
        let path = pattern.split(separator: "/").map { segment in
            String(segment.compactMap { $0 == "-" ? "_" : ($0.isLetter || $0.isNumber || $0 == "_" ? $0 : nil) })
        }
        return ([method.lowercased()] + path).joined(separator: "_")
    }

    /// `value` with every ``APISchema/named(_:_:)`` schema moved into `components` (a name
    /// standing for two schemas is a problem).
    static func extractingNamed(
        _ value: JSONValue,
        into components: inout [String: JSONValue],
        problems: inout [String]
    ) -> JSONValue {
        switch value {
        case .array(let items):
            return .array(items.map { extractingNamed($0, into: &components, problems: &problems) })
        case .object(var members):
            if let schema = members.removeValue(forKey: APISchema.namedKey),
                case .string(let reference) = members["$ref"]
            {
                let name = String(reference.dropFirst("#/components/schemas/".count))
                let extracted = extractingNamed(schema, into: &components, problems: &problems)
                if let known = components[name], known != extracted {
                    problems.append("the schema name \(name) stands for two different schemas")
                }
                components[name] = extracted
                return .object(members)
            }
            return .object(members.mapValues { extractingNamed($0, into: &components, problems: &problems) })
        default:
            return value
        }
    }
}
