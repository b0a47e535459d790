public import Foundation
public import HeraldCore

/// One HTTP request, fully received (the body is buffered, bounded by
/// ``HTTPServer/Configuration/maxBodySize``).
public struct HTTPRequest: Sendable {
    /// The method in upper case, e.g. `GET`.
    public var method: String
    /// The percent-decoded path, without the query string.
    public var path: String
    /// The path as received, before decoding. Split this (not ``path``) when a segment may hold
    /// an encoded `/`.
    public var rawPath: String
    /// The query's name/value pairs, percent-decoded with `+` read as a space, in order;
    /// repeated names are kept.
    public var query: [(name: String, value: String)]
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// Path parameters filled in by ``Router`` (`{token}` → `parameters["token"]`), decoded.
    public var parameters: [String: String]
    /// The client's IP address as seen by the server.
    public var remoteAddress: String
    /// A correlation id for logs; ``RequestIDMiddleware`` adopts a sane incoming `X-Request-Id`.
    public var requestID: String

    /// A request built in memory, e.g. for tests of a ``Router`` or a middleware.
    ///
    /// - Parameters:
    ///   - path: the request target as a client would send it: percent-encoded, optionally with
    ///     `?query`. It sets ``rawPath``, the decoded ``path`` and the leading ``query`` items.
    ///   - query: further query items, appended after those parsed from `path`.
    public init(
        method: String = "GET",
        path: String,
        query: [(name: String, value: String)] = [],
        headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [],
        remoteAddress: String = "127.0.0.1",
        requestID: String = RequestIdentifier.next()
    ) {
        let target = RequestTarget(path)
        self.method = method.uppercased()
        self.rawPath = target.rawPath
        self.path = RequestTarget.percentDecode(target.rawPath) ?? target.rawPath
        self.query = target.queryItems + query
        self.headers = headers
        self.body = body
        self.parameters = [:]
        self.remoteAddress = remoteAddress
        self.requestID = requestID
    }

    /// A request as the server received it, its target already split and decoded.
    init(
        method: String,
        rawPath: String,
        path: String,
        query: [(name: String, value: String)],
        headers: HTTPHeaders,
        body: [UInt8],
        remoteAddress: String
    ) {
        self.method = method
        self.rawPath = rawPath
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.parameters = [:]
        self.remoteAddress = remoteAddress
        self.requestID = RequestIdentifier.next()
    }

    /// The value of the last query item called `name` (exact, case-sensitive), or `nil`.
    public func queryValue(_ name: String) -> String? {
        query.last { $0.name == name }?.value
    }

    /// Every value of the query items called `name`, in order.
    public func queryValues(_ name: String) -> [String] {
        query.filter { $0.name == name }.map(\.value)
    }

    /// The body decoded as JSON.
    ///
    /// - Throws: ``HTTPError`` 400 `invalid_json` when the body is not JSON of the expected shape;
    ///   the message names the offending path when the decoder reports one.
    public func decode<T: Decodable>(_ type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        do {
            return try decoder.decode(T.self, from: Data(body))
        } catch let error as DecodingError {
            throw HTTPError.invalidJSON(error)
        } catch {
            throw HTTPError(status: 400, code: "invalid_json", message: "The request body is not valid JSON.")
        }
    }
}
