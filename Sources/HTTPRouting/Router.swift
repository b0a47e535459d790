import Glibc
import HeraldCore

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
///
/// A route may also answer immediately, on the server's I/O thread without a task hop
/// (``HTTPResponder/respondImmediately(to:)``): give it a synchronous handler with
/// ``on(_:_:immediately:)``, or one that answers when it can and an async handler for the rest
/// with ``on(_:_:immediately:otherwise:)``. 404 and 405 are always answered immediately.
public struct Router: HTTPResponder {
    public typealias Handler = @Sendable (HTTPRequest) async throws -> HTTPResponse
    /// Answers at once, without blocking, or returns `nil` (having changed nothing) to have the
    /// route's async handler answer instead.
    public typealias ImmediateHandler = @Sendable (HTTPRequest) -> HTTPResponse?
    /// Takes a request its immediate handler declined, to answer it later from any thread through
    /// the completion, without a task; returns `false` (having changed nothing) to leave it to
    /// the route's async handler (``HTTPResponder/respondLater(to:completion:)``).
    public typealias LaterHandler = @Sendable (HTTPRequest, @escaping @Sendable (HTTPResponse) -> Void) -> Bool
    /// Decides from the request line and headers alone (the request's body is empty): `nil` lets
    /// the request in, a response refuses it before its body is read (``admit(under:_:)``). A
    /// check that finds who the request comes from (a credential's claims) sets
    /// ``HTTPRequest/principal``, which the handler then reads: the credential is checked once.
    public typealias AdmissionCheck = @Sendable (inout HTTPRequest) -> HTTPResponse?

    /// A class, so that matching passes routes around with one retain instead of copying them.
    final class Route: Sendable {
        let method: String
        let pattern: String
        let segments: [Segment]
        let handler: Handler
        let immediate: ImmediateHandler?
        let later: LaterHandler?
        /// The route's own body limit; `nil`: the server's.
        let maxBodySize: Int?
        /// How the access log shows its paths (``Router/logPaths(of:as:)``); `nil`: as received.
        let loggedPath: LoggedPathRule?
        /// Checks run on the headers before the body is read (``Router/admit(under:_:)``).
        let admission: [AdmissionCheck]

        init(
            method: String,
            pattern: String,
            segments: [Segment],
            handler: @escaping Handler,
            immediate: ImmediateHandler?,
            later: LaterHandler? = nil,
            maxBodySize: Int?,
            loggedPath: LoggedPathRule?,
            admission: [AdmissionCheck]
        ) {
            self.method = method
            self.pattern = pattern
            self.segments = segments
            self.handler = handler
            self.immediate = immediate
            self.later = later
            self.maxBodySize = maxBodySize
            self.loggedPath = loggedPath
            self.admission = admission
        }

        func with(loggedPath: LoggedPathRule? = nil, admission: [AdmissionCheck]? = nil) -> Route {
            Route(
                method: method,
                pattern: pattern,
                segments: segments,
                handler: handler,
                immediate: immediate,
                later: later,
                maxBodySize: maxBodySize,
                loggedPath: loggedPath ?? self.loggedPath,
                admission: admission ?? self.admission
            )
        }
    }

    /// What a request resolves to before any handler runs.
    private enum Resolution {
        /// 404 or 405.
        case answer(HTTPResponse)
        case route(Route, HTTPRequest, headFallback: Bool)
    }

    enum Segment: Sendable, Equatable {
        /// A decoded literal, and its UTF-8 bytes for matching paths without escapes.
        case literal(String, [UInt8])
        case parameter(String)
    }

    /// How the access log shows paths of a pattern (``logPaths(of:as:)``), by pattern.
    private var loggedPaths: [String: LoggedPathRule] = [:]
    /// Admission checks by path prefix (``admit(under:_:)``), in the order they were added.
    private var admissionRules: [(prefix: String, check: AdmissionCheck)] = []
    private var routes: [Route] = []
    /// The routes with their own body limit (``on(_:_:maxBodySize:_:)``), usually few.
    private var limitedRoutes: [Route] = []
    /// What matching paths without escapes needs of `routes`, in plain values.
    private var table = MatchTable([])

    public init() {}

    /// Adds a route. A later route with the same method and pattern replaces the earlier one.
    ///
    /// - Parameters:
    ///   - method: the HTTP method, any case (stored upper-cased).
    ///   - pattern: `/literal/{parameter}/…`; must start with `/`.
    public mutating func on(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        add(method, pattern, handler, immediate: nil)
    }

    /// Adds a route whose requests may carry bodies up to `maxBodySize` bytes, instead of the
    /// server's ``HTTPServer/Configuration/maxBodySize`` (larger or smaller); beyond it the client
    /// gets 413 before the body is kept.
    public mutating func on(
        _ method: String,
        _ pattern: String,
        maxBodySize: Int,
        _ handler: @escaping Handler
    ) {
        precondition(maxBodySize >= 0, "a body limit cannot be negative")
        add(method, pattern, handler, immediate: nil, maxBodySize: maxBodySize)
    }

    /// Adds a route answered synchronously, on the server's I/O thread, without a task hop.
    /// `handler` must not block.
    public mutating func on(
        _ method: String,
        _ pattern: String,
        immediately handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse
    ) {
        add(method, pattern, { handler($0) }, immediate: { handler($0) })
    }

    /// Adds a route that `immediate` answers when it can do so at once, and `handler` otherwise
    /// (when `immediate` returns `nil`, or the request came in through ``respond(to:)``).
    public mutating func on(
        _ method: String,
        _ pattern: String,
        immediately immediate: @escaping ImmediateHandler,
        otherwise handler: @escaping Handler
    ) {
        add(method, pattern, handler, immediate: immediate)
    }

    /// ``on(_:_:immediately:otherwise:)`` with the route's own body limit, as in
    /// ``on(_:_:maxBodySize:_:)``: a `Content-Length` over it is 413 before the body is read.
    public mutating func on(
        _ method: String,
        _ pattern: String,
        maxBodySize: Int,
        immediately immediate: @escaping ImmediateHandler,
        otherwise handler: @escaping Handler
    ) {
        precondition(maxBodySize >= 0, "a body limit cannot be negative")
        add(method, pattern, handler, immediate: immediate, maxBodySize: maxBodySize)
    }

    /// ``on(_:_:maxBodySize:immediately:otherwise:)`` with a handler that answers later, without
    /// a task, what `immediate` declined (``LaterHandler``); `handler` answers what both decline.
    public mutating func on(
        _ method: String,
        _ pattern: String,
        maxBodySize: Int,
        immediately immediate: @escaping ImmediateHandler,
        later: @escaping LaterHandler,
        otherwise handler: @escaping Handler
    ) {
        precondition(maxBodySize >= 0, "a body limit cannot be negative")
        add(method, pattern, handler, immediate: immediate, later: later, maxBodySize: maxBodySize)
    }

    private mutating func add(
        _ method: String,
        _ pattern: String,
        _ handler: @escaping Handler,
        immediate: ImmediateHandler?,
        later: LaterHandler? = nil,
        maxBodySize: Int? = nil
    ) {
        precondition(pattern.hasPrefix("/"), "route pattern must start with '/': \(pattern)")
        let method = method.uppercased()
        let segments = Self.split(pattern).map { segment -> Segment in
            if segment.hasPrefix("{"), segment.hasSuffix("}"), segment.count > 2 {
                return .parameter(String(segment.dropFirst().dropLast()))
            }
            let literal = RequestTarget.percentDecode(segment) ?? String(segment)
            return .literal(literal, Array(literal.utf8))
        }
        let names = segments.compactMap { segment -> String? in
            if case .parameter(let name) = segment { return name }
            return nil
        }
        precondition(Set(names).count == names.count, "route pattern repeats a parameter name: \(pattern)")
        let route = Route(
            method: method,
            pattern: pattern,
            segments: segments,
            handler: handler,
            immediate: immediate,
            later: later,
            maxBodySize: maxBodySize,
            loggedPath: loggedPaths[pattern],
            admission: admissionRules.filter { Self.pattern(pattern, isUnder: $0.prefix) }.map(\.check)
        )
        if let existing = routes.firstIndex(where: { $0.method == method && $0.segments == segments }) {
            routes[existing] = route
        } else {
            routes.append(route)
        }
        limitedRoutes = routes.filter { $0.maxBodySize != nil }
        table = MatchTable(
            routes.map { route in
                (
                    route.method,
                    route.segments.map { segment -> [UInt8]? in
                        if case .literal(_, let bytes) = segment { return bytes }
                        return nil
                    }
                )
            }
        )
    }

    /// Has the access log show the paths of `pattern` (every method, refusals by the server
    /// included) as `transform(request)` instead of as received: for paths that hold what a log
    /// should not, such as a device token. `transform` runs only when a line is written, with
    /// the request as the access log sees it (``HTTPRequest/rawPath`` set, no parameters).
    public mutating func logPaths(of pattern: String, as transform: @escaping @Sendable (HTTPRequest) -> String) {
        let rule = LoggedPathRule(transform)
        loggedPaths[pattern] = rule
        routes = routes.map { $0.pattern == pattern ? $0.with(loggedPath: rule) : $0 }
        limitedRoutes = routes.filter { $0.maxBodySize != nil }
    }

    /// Has every route whose pattern is `prefix` or lies under it (`/v1` covers `/v1` and
    /// `/v1/…`, not `/v1x`), added before or after this call, run `check` on the request line and
    /// headers before its body is read. When `check` answers, the server sends that answer at
    /// once and closes the connection without reading the body: an API key check belongs here,
    /// so that a client without the key cannot make the server read megabytes. The route's
    /// handler runs only for admitted requests; ``respond(to:)`` runs the checks too, unless the
    /// server admitted the request already (``HTTPRequest/isAdmitted``): each check runs once.
    public mutating func admit(under prefix: String, _ check: @escaping AdmissionCheck) {
        var prefix = prefix
        while prefix.count > 1, prefix.hasSuffix("/") { prefix.removeLast() }
        precondition(prefix.hasPrefix("/"), "an admission prefix must start with '/': \(prefix)")
        admissionRules.append((prefix, check))
        routes = routes.map { route in
            guard Self.pattern(route.pattern, isUnder: prefix) else { return route }
            return route.with(admission: route.admission + [check])
        }
        limitedRoutes = routes.filter { $0.maxBodySize != nil }
    }

    /// Whether `pattern` is `prefix` or lies under it, segment-wise.
    private static func pattern(_ pattern: String, isUnder prefix: String) -> Bool {
        prefix == "/" || pattern == prefix || pattern.hasPrefix(prefix + "/")
    }

    public mutating func get(_ pattern: String, _ handler: @escaping Handler) { on("GET", pattern, handler) }
    public mutating func post(_ pattern: String, _ handler: @escaping Handler) { on("POST", pattern, handler) }
    public mutating func put(_ pattern: String, _ handler: @escaping Handler) { on("PUT", pattern, handler) }
    public mutating func patch(_ pattern: String, _ handler: @escaping Handler) { on("PATCH", pattern, handler) }
    public mutating func delete(_ pattern: String, _ handler: @escaping Handler) { on("DELETE", pattern, handler) }
    public mutating func head(_ pattern: String, _ handler: @escaping Handler) { on("HEAD", pattern, handler) }

    public func respond(to request: HTTPRequest) async throws -> HTTPResponse {
        switch resolve(request) {
        case .answer(let response):
            return response
        case .route(let route, var routed, let headFallback):
            RouteRecorder.current?.record(route.pattern, loggedPath: route.loggedPath)
            for check in route.admission where !routed.isAdmitted {
                if let refusal = check(&routed) {
                    return Self.finish(refusal, route: route, headFallback: headFallback)
                }
            }
            return Self.finish(try await route.handler(routed), route: route, headFallback: headFallback)
        }
    }

    /// 404, 405, or the answer of a route's immediate handler; `nil` for routes without one, or
    /// when it declined.
    public func respondImmediately(to request: HTTPRequest) -> HTTPResponse? {
        switch resolve(request) {
        case .answer(let response):
            return response
        case .route(let route, var routed, let headFallback):
            guard let immediate = route.immediate else { return nil }
            for check in route.admission where !routed.isAdmitted {
                if let refusal = check(&routed) {
                    return Self.finish(refusal, route: route, headFallback: headFallback)
                }
            }
            guard let response = immediate(routed) else { return nil }
            return Self.finish(response, route: route, headFallback: headFallback)
        }
    }

    /// Hands a request to its route's later handler (admission checks passed already, in
    /// ``respondImmediately(to:)``); `false` for routes without one, or when it declined.
    public func respondLater(
        to request: HTTPRequest,
        completion: @escaping @Sendable (HTTPResponse) -> Void
    ) -> Bool {
        guard case .route(let route, let routed, let headFallback) = resolve(request), let later = route.later else {
            return false
        }
        return later(routed) { response in completion(Self.finish(response, route: route, headFallback: headFallback)) }
    }

    /// The server's refusal, labelled with the route the request would have reached (and its
    /// ``logPaths(of:as:)`` rule), for metrics and the access log.
    public func refused(_ request: HTTPRequest, with response: HTTPResponse) -> HTTPResponse {
        guard case .route(let route, _, _) = resolve(request) else { return response }
        return Self.finish(response, route: route, headFallback: false)
    }

    /// 404 or 405 for a request no route takes, a route's admission refusal
    /// (``admit(under:_:)``), else the route's body limit: all decided before the body is read.
    public func admit(_ request: HTTPRequest) -> HTTPAdmission {
        // Paths without escapes reaching a route without checks: its limit, without decoding
        // parameters.
        if let found = table.match(method: request.method, alsoGet: request.method == "HEAD", rawPath: request.rawPath),
            let chosen = found.exact ?? found.get, routes[chosen].admission.isEmpty
        {
            return .readBody(maxBodySize: found.exact == nil ? nil : routes[chosen].maxBodySize)
        }
        switch resolve(request) {
        case .answer(let response):
            return .answer(response)
        case .route(let route, var routed, let headFallback):
            for check in route.admission {
                if let refusal = check(&routed) {
                    return .answer(Self.finish(refusal, route: route, headFallback: headFallback))
                }
            }
            return .readBody(maxBodySize: headFallback ? nil : route.maxBodySize, principal: routed.principal)
        }
    }

    /// The limit of the route `method` on `rawPath` would reach, if it has its own.
    public func maximumBodySize(method: String, rawPath: String) -> Int? {
        guard limitedRoutes.contains(where: { $0.method == method }) else { return nil }
        // The most specific route of all, not only of the limited ones: a more specific route
        // without its own limit has the server's.
        if let found = table.match(method: method, alsoGet: false, rawPath: rawPath) {
            return found.exact.flatMap { routes[$0].maxBodySize }
        }
        return Self.withMatcher(rawPath) { matches, _ in
            var best: Route?
            for route in routes where route.method == method && matches(route) {
                if best.map({ Self.isLessSpecific($0, than: route) }) ?? true { best = route }
            }
            return best?.maxBodySize
        }
    }

    /// Runs `body` with a matcher for `rawPath` and a decoder of a matching route's parameters.
    ///
    /// Paths without `%` escapes (nearly all) are matched byte by byte without splitting them
    /// into segments first; the others are split, and their literal segments decoded.
    private static func withMatcher<T>(
        _ rawPath: String,
        _ body: (_ matches: (Route) -> Bool, _ parameters: (Route) -> PathParameters) -> T
    ) -> T {
        var path = rawPath
        return path.withUTF8 { bytes in
            guard !bytes.contains(UInt8(ascii: "%")) else {
                let segments = split(rawPath)
                return body({ matches($0.segments, segments) }, { parameters($0.segments, segments) })
            }
            let count = segmentCount(bytes)
            return body(
                { $0.segments.count == count && matches($0.segments, bytes) },
                { parameters($0.segments, bytes) }
            )
        }
    }

    private func resolve(_ request: HTTPRequest) -> Resolution {
        // Paths without escapes (nearly all) are matched against the table; a match decodes the
        // chosen route's parameters only.
        if let found = table.match(method: request.method, alsoGet: request.method == "HEAD", rawPath: request.rawPath),
            let chosen = found.exact ?? found.get
        {
            let route = routes[chosen]
            var routed = request
            var path = request.rawPath
            routed.parameters = path.withUTF8 { Self.parameters(route.segments, $0) }
            return .route(route, routed, headFallback: found.exact == nil)
        }
        return Self.withMatcher(request.rawPath) { matches, parameters in
            resolve(request, matches: matches, parameters: parameters)
        }
    }

    private func resolve(
        _ request: HTTPRequest,
        matches: (Route) -> Bool,
        parameters: (Route) -> PathParameters
    ) -> Resolution {
        let method = request.method
        // One pass, no intermediate arrays: the most specific route for the method, and for GET
        // in case a HEAD request has no route of its own. Parameters are decoded only for the
        // chosen route; matching itself allocates nothing.
        // Methods are compared first: they are short, and most routes differ in them.
        var exact: Int?
        var get: Int?
        let isHead = method == "HEAD"
        for index in routes.indices {
            let candidate = routes[index]
            if candidate.method == method {
                guard matches(candidate) else { continue }
                if exact.map({ Self.isLessSpecific(routes[$0], than: candidate) }) ?? true { exact = index }
            } else if isHead, candidate.method == "GET" {
                guard matches(candidate) else { continue }
                if get.map({ Self.isLessSpecific(routes[$0], than: candidate) }) ?? true { get = index }
            }
        }
        guard exact != nil || get != nil || routes.contains(where: matches) else {
            return .answer(
                .error(
                    status: 404,
                    code: "not_found",
                    message: "No route matches \(request.method) \(request.path)."
                )
            )
        }
        guard let chosen = exact ?? get else {
            var allowed = Set(routes.filter(matches).map(\.method))
            if allowed.contains("GET") { allowed.insert("HEAD") }
            let allow = allowed.sorted().joined(separator: ", ")
            var response = HTTPResponse.error(
                status: 405,
                code: "method_not_allowed",
                message: "\(method) is not allowed here; use \(allow)."
            )
            response.headers.replaceOrAdd(name: "Allow", value: allow)
            return .answer(response)
        }
        let route = routes[chosen]
        var routed = request
        routed.parameters = parameters(route)
        return .route(route, routed, headFallback: exact == nil)
    }

    /// Consumes `response`, so that its box is changed in place rather than copied.
    private static func finish(_ response: consuming HTTPResponse, route: Route, headFallback: Bool) -> HTTPResponse {
        var response = response
        response.route = route.pattern
        response.loggedPathRule = route.loggedPath
        if headFallback {
            if !response.headers.contains(name: "Content-Length") {
                response.headers.replaceOrAdd(name: "Content-Length", value: String(response.body.count))
            }
            response.body = []
        }
        return response
    }
}
