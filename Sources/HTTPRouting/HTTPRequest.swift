import Foundation
public import HeraldCore

/// One HTTP request, fully received (the body is buffered, bounded by
/// ``HTTPServer/Configuration/maxBodySize``).
public struct HTTPRequest: Sendable {
    /// What the client sent, in one box shared by copies until one changes a field: middleware
    /// and the router pass requests on by value, and one box is one retain. The accessors yield
    /// the fields in place (`_read`), so a handler reading a header or the body borrows it.
    private var received: CopyOnWriteBox<Received>
    /// Path parameters filled in by ``Router`` (`{token}` → `parameters["token"]`), decoded.
    public var parameters: PathParameters
    /// A correlation id for logs; ``RequestIDMiddleware`` adopts a sane incoming `X-Request-Id`.
    public var requestID: String
    /// Set by the server on a request whose headers passed ``HTTPResponder/admit(_:)`` already:
    /// the router does not run its admission checks a second time (a check may count the
    /// request, as a rate limit does). Requests built in memory have it unset.
    public var isAdmitted = false
    /// Who the route's admission check found the request to come from (a client token's claims),
    /// set once, before the body is read (``Router/AdmissionCheck``); `nil` for routes that need
    /// no credential or whose credential names nobody (an API key).
    public var principal: (any Sendable)?

    /// The method in upper case, e.g. `GET`.
    public var method: String {
        _read { yield received.fields.method }
        set { received.fields.method = newValue }
    }
    /// The percent-decoded path, without the query string.
    public var path: String {
        _read { yield received.fields.path }
        set { received.fields.path = newValue }
    }
    /// The path as received, before decoding. Split this (not ``path``) when a segment may hold
    /// an encoded `/`.
    public var rawPath: String {
        _read { yield received.fields.rawPath }
        set { received.fields.rawPath = newValue }
    }
    /// The query's name/value pairs, percent-decoded with `+` read as a space, in order;
    /// repeated names are kept.
    public var query: [(name: String, value: String)] {
        _read { yield received.fields.query }
        set { received.fields.query = newValue }
    }
    public var headers: HTTPHeaders {
        _read { yield received.fields.headers }
        set { received.fields.headers = newValue }
    }
    public var body: [UInt8] {
        _read { yield received.fields.body }
        set { received.fields.body = newValue }
    }
    /// The client's IP address as seen by the server.
    public var remoteAddress: String {
        _read { yield received.fields.remoteAddress }
        set { received.fields.remoteAddress = newValue }
    }

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
        self.init(
            method: method.uppercased(),
            rawPath: target.rawPath,
            path: RequestTarget.percentDecode(target.rawPath) ?? target.rawPath,
            query: target.queryItems + query,
            headers: headers,
            body: body,
            remoteAddress: remoteAddress,
            requestID: requestID
        )
    }

    /// A request as the server received it, its target already split and decoded.
    package init(
        method: String,
        rawPath: String,
        path: String,
        query: [(name: String, value: String)],
        headers: HTTPHeaders,
        body: [UInt8],
        remoteAddress: String,
        requestID: String = RequestIdentifier.next()
    ) {
        self.received = CopyOnWriteBox(
            Received(
                method: method,
                path: path,
                rawPath: rawPath,
                query: query,
                headers: headers,
                body: body,
                remoteAddress: remoteAddress
            )
        )
        self.parameters = PathParameters()
        self.requestID = requestID
    }

    /// The value of the last query item called `name` (exact, case-sensitive), or `nil`.
    public func queryValue(_ name: String) -> String? {
        query.last { $0.name == name }?.value
    }

    /// Every value of the query items called `name`, in order.
    public func queryValues(_ name: String) -> [String] {
        query.filter { $0.name == name }.map(\.value)
    }

}

extension HTTPRequest {
    /// The request's fields as received.
    private struct Received: Sendable {
        var method: String
        var path: String
        var rawPath: String
        var query: [(name: String, value: String)]
        var headers: HTTPHeaders
        var body: [UInt8]
        var remoteAddress: String
    }
}

/// The parameters a ``Router`` pattern captured (`{token}` → `parameters["token"]`), decoded, in
/// pattern order. A route has a handful at most, so they are kept as pairs and found by
/// comparing names: cheaper than hashing them into a dictionary for every request.
public struct PathParameters: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    public typealias Element = (name: String, value: String)

    private var pairs: [Element]

    public init() {
        self.pairs = []
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.pairs = elements.map { (name: $0.0, value: $0.1) }
    }

    /// The value captured for `name`; setting one replaces it (or adds it), `nil` removes it.
    public subscript(name: String) -> String? {
        get {
            var index = 0
            while index < pairs.count {
                if pairs[index].name == name { return pairs[index].value }
                index += 1
            }
            return nil
        }
        set {
            pairs.removeAll { $0.name == name }
            if let newValue { pairs.append((name: name, value: newValue)) }
        }
    }

    public var count: Int { pairs.count }

    public var isEmpty: Bool { pairs.isEmpty }

    public func makeIterator() -> IndexingIterator<[Element]> {
        pairs.makeIterator()
    }

    /// Adds a parameter the router knows to be new (names in a pattern are distinct).
    mutating func append(name: String, value: String) {
        if pairs.isEmpty { pairs.reserveCapacity(4) }
        pairs.append((name: name, value: value))
    }
}
