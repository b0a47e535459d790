public import Foundation
public import HeraldCore

/// One HTTP response, body buffered.
///
/// HEAD requests: the server sends the headers and `Content-Length` of the body given here but
/// never the body itself. A HEAD response with an empty body and an explicit `Content-Length`
/// header (what ``Router``'s GET fallback produces) announces that length.
public struct HTTPResponse: Sendable {
    public var status: Int {
        get { storage.fields.status }
        set { storage.fields.status = newValue }
    }
    public var headers: HTTPHeaders {
        get { storage.fields.headers }
        // In place: middleware adds headers to every response, and a get-then-set would copy them.
        _modify { yield &storage.fields.headers }
    }
    public var body: [UInt8] {
        get { storage.fields.body }
        _modify { yield &storage.fields.body }
    }
    /// The route pattern that produced this response (`/push/{token}`), set by ``Router``; `nil`
    /// when no route matched. Metrics and access logs use it as a low-cardinality label.
    public var route: String? {
        get { storage.fields.route }
        set { storage.fields.route = newValue }
    }
    /// The request's path as the access log shows it, when the handler wants it shown otherwise;
    /// `nil`: the route's ``Router/logPaths(of:as:)`` rule, or the path as received.
    public var loggedPath: String? {
        get { storage.fields.loggedPath }
        set { storage.fields.loggedPath = newValue }
    }
    /// The `code` of an error answer made by ``error(status:code:message:field:)``, which the
    /// access log shows beside the status.
    public var errorCode: String? {
        get { storage.fields.errorCode }
        set { storage.fields.errorCode = newValue }
    }
    /// The rule of the route that answered, applied only when a line is written.
    var loggedPathRule: LoggedPathRule? {
        get { storage.fields.loggedPathRule }
        set { storage.fields.loggedPathRule = newValue }
    }

    /// The fields in one box, shared by copies until one of them changes: the router and each
    /// middleware pass the response on and change a field or two, with one retain per copy.
    private var storage: CopyOnWriteBox<Fields>

    private struct Fields: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: [UInt8]
        var route: String?
        var loggedPath: String?
        var loggedPathRule: LoggedPathRule?
        var errorCode: String?
    }

    public init(status: Int = 200, headers: HTTPHeaders = .init(), body: [UInt8] = []) {
        storage = CopyOnWriteBox(
            Fields(
                status: status,
                headers: headers,
                body: body,
                route: nil,
                loggedPath: nil,
                loggedPathRule: nil,
                errorCode: nil
            )
        )
    }

    /// `value` encoded as JSON (dates as RFC 3339 UTC strings), `Content-Type: application/json`.
    /// A value that cannot be encoded gives a 500 `internal_error` response instead.
    public static func json(_ value: some Encodable & Sendable, status: Int = 200) -> HTTPResponse {
        do {
            let body = try jsonEncoder().encode(value)
            return HTTPResponse(
                status: status,
                headers: ["Content-Type": "application/json"],
                body: Array(body)
            )
        } catch {
            return .error(status: 500, code: "internal_error", message: "The response could not be encoded.")
        }
    }

    /// `value` written by the one JSON grammar (`JSONValue`, keys sorted): no `Encoder` between.
    public static func json(_ value: JSONValue, status: Int = 200) -> HTTPResponse {
        do {
            return HTTPResponse(
                status: status,
                headers: ["Content-Type": "application/json"],
                body: try value.jsonBytes()
            )
        } catch {
            return .error(status: 500, code: "internal_error", message: "The response could not be encoded.")
        }
    }

    /// `text` as UTF-8.
    public static func text(
        _ text: String,
        status: Int = 200,
        contentType: String = "text/plain; charset=utf-8"
    ) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": contentType], body: Array(text.utf8))
    }

    /// The API's error shape: `{"error":{"code":"…","message":"…","field":"…"}}`, `field` left
    /// out when `nil`, `Content-Type: application/json`.
    public static func error(status: Int, code: String, message: String, field: String? = nil) -> HTTPResponse {
        var json = "{\"error\":{\"code\":\(JSONText.quote(code)),\"message\":\(JSONText.quote(message))"
        if let field { json += ",\"field\":\(JSONText.quote(field))" }
        json += "}}"
        var response = HTTPResponse(
            status: status,
            headers: ["Content-Type": "application/json"],
            body: Array(json.utf8)
        )
        response.errorCode = code
        return response
    }

    /// The encoder ``json(_:status:)`` uses: RFC 3339 dates, no escaped slashes, sorted keys (so
    /// output is stable for golden tests).
    public static func jsonEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(RFC3339.string(from: date))
        }
        return encoder
    }
}

/// A route's way of showing its paths in the access log (``Router/logPaths(of:as:)``): a class,
/// so that a response carries it with one retain and runs it only for a line that is written.
final class LoggedPathRule: Sendable {
    let transform: @Sendable (HTTPRequest) -> String

    init(_ transform: @escaping @Sendable (HTTPRequest) -> String) {
        self.transform = transform
    }
}
