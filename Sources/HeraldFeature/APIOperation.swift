public import HeraldCore

/// What a route's OpenAPI operation says beyond what the route declares already (method, path,
/// credential, query parameter names, body limit): a summary, the query parameters' schemas, the
/// request body's schema and example, and each success answer's schema. Every `/v1` route has
/// one (a test checks); `GET /v1/openapi.json` is generated from them (``OpenAPIDocument``).
///
/// Errors need no declaring: every operation answers them in the one format (the `Error`
/// schema), under `default`.
///
/// ```swift
/// group.get("/{id}") { request in try await read(request) }
/// group.describe("GET", "/{id}", APIOperation("Read a widget", responses: [200: .json("The widget", widget)]))
/// ```
public struct APIOperation: Sendable {
    public var summary: String
    public var description: String?
    /// Schemas and descriptions of the route's path and query parameters, by name; one the route
    /// takes but this omits is a string (`limit` and `cursor` are known).
    public var parameters: [String: APIParameter]
    /// The request body, for a route that reads one.
    public var request: APIBody?
    /// The success answers by status (`200`, `201`, `202`, `204`, `304`).
    public var responses: [Int: APIBody]

    public init(
        _ summary: String,
        description: String? = nil,
        parameters: [String: APIParameter] = [:],
        request: APIBody? = nil,
        responses: [Int: APIBody]
    ) {
        self.summary = summary
        self.description = description
        self.parameters = parameters
        self.request = request
        self.responses = responses
    }
}

/// A request or response body: what it is, its JSON schema and an example (`nil` for none,
/// as a 204's).
public struct APIBody: Sendable {
    public var description: String
    public var schema: JSONValue?
    public var example: JSONValue?
    /// For an answer: the operations its values lead to (OpenAPI links), such as the read of what
    /// a create answered. Tools that follow them (schemathesis' stateful phase) test those
    /// operations on things that exist.
    public var links: [APILink]

    public init(_ description: String, schema: JSONValue?, example: JSONValue? = nil, links: [APILink] = []) {
        self.description = description
        self.schema = schema
        self.example = example
        self.links = links
    }

    /// An `application/json` body.
    public static func json(
        _ description: String,
        _ schema: JSONValue,
        example: JSONValue? = nil,
        links: [APILink] = []
    ) -> APIBody {
        APIBody(description, schema: schema, example: example, links: links)
    }

    /// An answer without a body (204, 304).
    public static func empty(_ description: String) -> APIBody {
        APIBody(description, schema: nil)
    }
}

/// An answer's link to another operation: `"GET /v1/webhooks/{id}"` with its parameters taken
/// from the answer (`["id": "$response.body#/id"]`, OpenAPI runtime expressions).
public struct APILink: Sendable {
    public var name: String
    /// `METHOD /path/{parameter}`, as the route declares it.
    public var operation: String
    public var parameters: [String: String]

    public init(_ name: String, to operation: String, parameters: [String: String]) {
        self.name = name
        self.operation = operation
        self.parameters = parameters
    }

    /// Links to each of `operations`, all with the `id` of the answer as their `{id}`.
    public static func byID(_ operations: [String]) -> [APILink] {
        operations.map { operation in
            let name = operation.split(separator: " ").map { $0.split(separator: "/").joined(separator: "-") }
                .joined(separator: "-")
            return APILink(name, to: operation, parameters: ["id": "$response.body#/id"])
        }
    }
}

/// A query parameter's description and schema.
public struct APIParameter: Sendable {
    public var description: String
    public var schema: JSONValue

    public init(_ description: String, _ schema: JSONValue = APISchema.string) {
        self.description = description
        self.schema = schema
    }
}

/// JSON Schema (2020-12, as OpenAPI 3.1 takes it) written as ``HeraldCore/JSONValue``s, with the
/// few shapes Herald's bodies use.
public enum APISchema {
    public static let string: JSONValue = ["type": "string"]
    public static let integer: JSONValue = ["type": "integer"]
    public static let number: JSONValue = ["type": "number"]
    public static let boolean: JSONValue = ["type": "boolean"]
    /// Any JSON value.
    public static let any: JSONValue = [:]
    /// Any JSON object.
    public static let anyObject: JSONValue = ["type": "object"]
    /// An RFC 3339 time, as every answer writes times.
    public static let dateTime: JSONValue = ["type": "string", "format": "date-time"]
    /// A lowercase UUID.
    public static let uuid: JSONValue = ["type": "string", "format": "uuid"]
    /// A device or push-to-start token: 64 to 200 hexadecimal digits.
    public static let token: JSONValue = ["type": "string", "pattern": "^[0-9a-fA-F]{64,200}$"]

    public static func string(description: String) -> JSONValue {
        ["type": "string", "description": .string(description)]
    }

    /// A string of `length` characters at most (and at least `minimum`).
    public static func string(maxLength: Int, minLength: Int = 1) -> JSONValue {
        ["type": "string", "minLength": .integer(Int64(minLength)), "maxLength": .integer(Int64(maxLength))]
    }

    /// One of `values`.
    public static func oneOf(_ values: [String]) -> JSONValue {
        ["type": "string", "enum": .array(values.map(JSONValue.string))]
    }

    public static func integer(_ range: ClosedRange<Int64>) -> JSONValue {
        ["type": "integer", "minimum": .integer(range.lowerBound), "maximum": .integer(range.upperBound)]
    }

    public static func array(_ items: JSONValue, maxItems: Int? = nil, minItems: Int? = nil) -> JSONValue {
        var schema: [String: JSONValue] = ["type": "array", "items": items]
        if let maxItems { schema["maxItems"] = .integer(Int64(maxItems)) }
        if let minItems { schema["minItems"] = .integer(Int64(minItems)) }
        return .object(schema)
    }

    /// `schema` or `null`.
    public static func nullable(_ schema: JSONValue) -> JSONValue {
        ["anyOf": [schema, ["type": "null"]]]
    }

    /// An object with these members. `required`: the members always present (`nil`: all of
    /// them). `closed`: no other member is allowed, as in request bodies (an unknown field is
    /// refused).
    public static func object(
        _ properties: [String: JSONValue],
        required: [String]? = nil,
        closed: Bool = false,
        description: String? = nil
    ) -> JSONValue {
        var schema: [String: JSONValue] = [
            "type": "object",
            "properties": .object(properties),
            "required": .array((required ?? properties.keys.sorted()).sorted().map(JSONValue.string)),
        ]
        if closed { schema["additionalProperties"] = false }
        if let description { schema["description"] = .string(description) }
        return .object(schema)
    }

    /// An object whose members are all of `values`' schema (a map).
    public static func map(_ values: JSONValue) -> JSONValue {
        ["type": "object", "additionalProperties": values]
    }

    /// A page of a list, as every list answers one: `{"<name>": [...], "next_cursor"}`.
    public static func page(_ name: String, _ item: JSONValue) -> JSONValue {
        object([name: array(item), "next_cursor": nullable(string)])
    }

    /// `schema` under `name` in the document's components, referred to where it is used: the
    /// generator moves it there (``OpenAPIDocument``), so a shape used by several operations is
    /// written once. One name must always stand for one schema.
    public static func named(_ name: String, _ schema: JSONValue) -> JSONValue {
        ["$ref": .string("#/components/schemas/\(name)"), namedKey: schema]
    }

    /// An example written as JSON text (an answer Herald gave, say); `null` when the text is not
    /// JSON, which the contract test's check of every example against its schema then reports.
    public static func example(_ json: String) -> JSONValue {
        (try? JSONValue.parse(Array(json.utf8))) ?? .null
    }

    /// Where ``named(_:_:)`` keeps the schema until the generator moves it.
    static let namedKey = "x-herald-schema"
}
