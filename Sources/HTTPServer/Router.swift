/// Routes requests by method and path pattern to handlers.
///
/// A pattern is a path whose segments are literals or `{name}` parameters; a parameter matches
/// exactly one non-empty segment, decoded into ``HTTPRequest/parameters``. Segments are split on
/// the raw path, so an encoded `/` (`%2F`) stays inside its segment. When several patterns match,
/// the one whose first differing segment is a literal wins. A trailing slash is significant:
/// `/a/` and `/a` are different paths.
///
/// - Unknown path: 404 `not_found`.
/// - Known path, other method: 405 `method_not_allowed` with an `Allow` header.
/// - `HEAD` without a HEAD route runs the GET route; the body is dropped and its length kept in
///   `Content-Length`.
///
/// The matched pattern is set on ``HTTPResponse/route`` (and noted for middleware when the
/// handler throws), so metrics and access logs label requests by route, never by raw path.
///
/// ```swift
/// var router = Router()
/// router.post("/push/{token}") { request in
///     let token = request.parameters["token"]!
///     return .json(["token": token], status: 202)
/// }
/// ```
public struct Router: HTTPResponder {
    public typealias Handler = @Sendable (HTTPRequest) async throws -> HTTPResponse

    private struct Route: Sendable {
        var method: String
        var pattern: String
        var segments: [Segment]
        var handler: Handler
    }

    private enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    private var routes: [Route] = []

    public init() {}

    /// Adds a route. A later route with the same method and pattern replaces the earlier one.
    ///
    /// - Parameters:
    ///   - method: the HTTP method, any case (stored upper-cased).
    ///   - pattern: `/literal/{parameter}/…`; must start with `/`.
    public mutating func on(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        precondition(pattern.hasPrefix("/"), "route pattern must start with '/': \(pattern)")
        let method = method.uppercased()
        let segments = Self.split(pattern).map { segment -> Segment in
            if segment.hasPrefix("{"), segment.hasSuffix("}"), segment.count > 2 {
                return .parameter(String(segment.dropFirst().dropLast()))
            }
            return .literal(RequestTarget.percentDecode(segment) ?? String(segment))
        }
        let route = Route(method: method, pattern: pattern, segments: segments, handler: handler)
        if let existing = routes.firstIndex(where: { $0.method == method && $0.segments == segments }) {
            routes[existing] = route
        } else {
            routes.append(route)
        }
    }

    public mutating func get(_ pattern: String, _ handler: @escaping Handler) { on("GET", pattern, handler) }
    public mutating func post(_ pattern: String, _ handler: @escaping Handler) { on("POST", pattern, handler) }
    public mutating func put(_ pattern: String, _ handler: @escaping Handler) { on("PUT", pattern, handler) }
    public mutating func patch(_ pattern: String, _ handler: @escaping Handler) { on("PATCH", pattern, handler) }
    public mutating func delete(_ pattern: String, _ handler: @escaping Handler) { on("DELETE", pattern, handler) }
    public mutating func head(_ pattern: String, _ handler: @escaping Handler) { on("HEAD", pattern, handler) }

    public func respond(to request: HTTPRequest) async throws -> HTTPResponse {
        let segments = Self.split(request.rawPath)
        // Parameters are decoded only for the chosen route; matching itself allocates nothing.
        let candidates = routes.filter { Self.matches($0.segments, segments) }
        guard !candidates.isEmpty else {
            return .error(
                status: 404,
                code: "not_found",
                message: "No route matches \(request.method) \(request.path)."
            )
        }

        let method = request.method
        var chosen = Self.mostSpecific(candidates.filter { $0.method == method })
        var headFallback = false
        if chosen == nil, method == "HEAD" {
            chosen = Self.mostSpecific(candidates.filter { $0.method == "GET" })
            headFallback = chosen != nil
        }
        guard let route = chosen else {
            var allowed = Set(candidates.map(\.method))
            if allowed.contains("GET") { allowed.insert("HEAD") }
            let allow = allowed.sorted().joined(separator: ", ")
            var response = HTTPResponse.error(
                status: 405,
                code: "method_not_allowed",
                message: "\(method) is not allowed here; use \(allow)."
            )
            response.headers.replaceOrAdd(name: "Allow", value: allow)
            return response
        }

        RouteRecorder.current?.record(route.pattern)
        var routed = request
        routed.parameters = Self.parameters(route.segments, segments)
        var response = try await route.handler(routed)
        response.route = route.pattern
        if headFallback {
            if !response.headers.contains(name: "Content-Length") {
                response.headers.replaceOrAdd(name: "Content-Length", value: String(response.body.count))
            }
            response.body = []
        }
        return response
    }

    /// Path segments after the leading `/`: `/a/b/` → `a`, `b`, `` (the trailing slash counts).
    private static func split(_ path: String) -> [Substring] {
        // `/` is ASCII, so every UTF-8 index next to one is also a character boundary.
        var segments: [Substring] = []
        let utf8 = path.utf8
        var start = utf8.startIndex
        if utf8.first == UInt8(ascii: "/") { start = utf8.index(after: start) }
        var index = start
        while index != utf8.endIndex {
            if utf8[index] == UInt8(ascii: "/") {
                segments.append(path[start..<index])
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        if start != utf8.startIndex || !path.isEmpty { segments.append(path[start..<utf8.endIndex]) }
        return segments
    }

    private static func matches(_ pattern: [Segment], _ segments: [Substring]) -> Bool {
        guard pattern.count == segments.count else { return false }
        for (expected, actual) in zip(pattern, segments) {
            switch expected {
            case .literal(let literal):
                if actual.utf8.contains(UInt8(ascii: "%")) {
                    guard literal == RequestTarget.percentDecode(actual) ?? String(actual) else { return false }
                } else {
                    guard literal.utf8.elementsEqual(actual.utf8) else { return false }
                }
            case .parameter:
                guard !actual.isEmpty else { return false }
            }
        }
        return true
    }

    /// The decoded parameters of a route that ``matches(_:_:)``.
    private static func parameters(_ pattern: [Segment], _ segments: [Substring]) -> [String: String] {
        var parameters: [String: String] = [:]
        for (expected, actual) in zip(pattern, segments) {
            if case .parameter(let name) = expected {
                parameters[name] = RequestTarget.percentDecode(actual) ?? String(actual)
            }
        }
        return parameters
    }

    /// The candidate whose first segment that differs from the others' is a literal.
    private static func mostSpecific(_ candidates: [Route]) -> Route? {
        candidates.max { lhs, rhs in
            for (left, right) in zip(lhs.segments, rhs.segments) {
                switch (left, right) {
                case (.parameter, .literal): return true
                case (.literal, .parameter): return false
                default: continue
                }
            }
            return false
        }
    }
}
