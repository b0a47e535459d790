import Foundation

/// An error a handler throws to answer with a given status and the API's JSON error body.
///
/// ```swift
/// guard let id = RequestIdentifier.uuid(request.parameters["id"] ?? "") else {
///     throw HTTPError(status: 400, code: "invalid_id", message: "The id must be a UUID.", field: "id")
/// }
/// ```
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    public var status: Int
    /// A snake_case code clients can switch on.
    public var code: String
    /// A sentence a person can act on. Never put secrets here: it is sent to the client.
    public var message: String
    /// The JSON path or parameter at fault, if any.
    public var field: String?
    /// Extra response headers, e.g. `Retry-After` on a 503 or `Allow` on a 405.
    public var headers: HTTPHeaders

    public init(status: Int, code: String, message: String, field: String? = nil, headers: HTTPHeaders = .init()) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = headers
    }

    public var description: String {
        "HTTPError(\(status) \(code): \(message)\(field.map { " [\($0)]" } ?? ""))"
    }

    /// The response this error becomes: the JSON error body plus ``headers``.
    public var response: HTTPResponse {
        var response = HTTPResponse.error(status: status, code: code, message: message, field: field)
        for (name, value) in headers { response.headers.replaceOrAdd(name: name, value: value) }
        return response
    }
}
