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
/// The matched pattern is set on ``HTTPResponse/route`` (on ``HTTPFailure/route`` when the
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
/// Every route has one handler kind, ``Answering``: called on the server's I/O thread with the
/// request and a one-shot ``HTTPResponseSink``, it answers exactly once, from any thread, at
/// once when it can (without a task hop). An async handler (``Handler``, as above) is that kind
/// answering from a task (``HTTPResponseSink/answer(by:)``). 404 and 405 are answered at once.
public struct Router: HTTPResponder {
    /// A route written as an async function, run in a task; what it throws goes to the
    /// middleware that maps errors (``ErrorMiddleware``).
    public typealias Handler = @Sendable (HTTPRequest) async throws -> HTTPResponse
    /// What every route runs: answers the request through the sink exactly once, from any
    /// thread. Called on an I/O thread: must not block.
    public typealias Answering = @Sendable (HTTPRequest, HTTPResponseSink) -> Void
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
        let handler: Answering
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
            handler: @escaping Answering,
            maxBodySize: Int?,
            loggedPath: LoggedPathRule?,
            admission: [AdmissionCheck]
        ) {
            self.method = method
            self.pattern = pattern
            self.segments = segments
            self.handler = handler
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
    /// Admission checks by path prefix (``admit(under:_:)``) or for one route
    /// (``admit(_:_:_:)``), in the order they were added.
    private var admissionRules: [(scope: AdmissionScope, check: AdmissionCheck)] = []
    private var routes: [Route] = []
    /// The routes with their own body limit (``on(_:_:maxBodySize:_:)``), usually few.
    private var limitedRoutes: [Route] = []
    /// What matching paths without escapes needs of `routes`, in plain values.
    private var table = MatchTable([])

    /// Where to look for what is served, said in every 404 of a path no route takes
    /// (`GET /v1 lists every operation`); `nil`: nothing said.
    public var notFoundHint: String?

    public init() {}

    /// Adds a route written as an async function (run in a task). A later route with the same
    /// method and pattern replaces the earlier one.
    ///
    /// - Parameters:
    ///   - method: the HTTP method, any case (stored upper-cased).
    ///   - pattern: `/literal/{parameter}/…`; must start with `/`.
    public mutating func on(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        add(method, pattern, Self.answering(handler))
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
        add(method, pattern, Self.answering(handler), maxBodySize: maxBodySize)
    }

    /// Adds a route answered through the sink, on the server's I/O thread: at once when the
    /// handler can (no task hop), later from any thread when it must wait. `handler` must not
    /// block; `maxBodySize` as in ``on(_:_:maxBodySize:_:)``.
    public mutating func on(
        _ method: String,
        _ pattern: String,
        maxBodySize: Int? = nil,
        answering handler: @escaping Answering
    ) {
        precondition(maxBodySize.map { $0 >= 0 } ?? true, "a body limit cannot be negative")
        add(method, pattern, handler, maxBodySize: maxBodySize)
    }

    /// `handler` as the one route kind: answered from a task.
    private static func answering(_ handler: @escaping Handler) -> Answering {
        { request, answer in answer.answer(by: { try await handler(request) }) }
    }

    private mutating func add(
        _ method: String,
        _ pattern: String,
        _ handler: @escaping Answering,
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
            maxBodySize: maxBodySize,
            loggedPath: loggedPaths[pattern],
            admission: admissionRules.filter { $0.scope.covers(method: method, pattern: pattern) }.map(\.check)
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
    /// handler runs only for admitted requests; ``respond(to:answer:)`` runs the checks too, unless the
    /// server admitted the request already (``HTTPRequest/isAdmitted``): each check runs once.
    public mutating func admit(under prefix: String, _ check: @escaping AdmissionCheck) {
        var prefix = prefix
        while prefix.count > 1, prefix.hasSuffix("/") { prefix.removeLast() }
        precondition(prefix.hasPrefix("/"), "an admission prefix must start with '/': \(prefix)")
        addAdmission(.prefix(prefix), check)
    }

    /// Has the one route of `method` and `pattern` (exactly as it was added, before or after this
    /// call) run `check` as ``admit(under:_:)`` describes, and no other route: for a credential
    /// that one route takes and the routes beside or under it do not. A `HEAD` answered by the
    /// `GET` route runs the `GET` route's checks.
    public mutating func admit(_ method: String, _ pattern: String, _ check: @escaping AdmissionCheck) {
        addAdmission(.route(method: method.uppercased(), pattern: pattern), check)
    }

    private mutating func addAdmission(_ scope: AdmissionScope, _ check: @escaping AdmissionCheck) {
        admissionRules.append((scope, check))
        routes = routes.map { route in
            guard scope.covers(method: route.method, pattern: route.pattern) else { return route }
            return route.with(admission: route.admission + [check])
        }
        limitedRoutes = routes.filter { $0.maxBodySize != nil }
    }

    /// The routes an admission check runs on.
    private enum AdmissionScope {
        /// Every route whose pattern is this one or lies under it.
        case prefix(String)
        /// The one route of this method and pattern.
        case route(method: String, pattern: String)

        func covers(method: String, pattern: String) -> Bool {
            switch self {
            case .prefix(let prefix): Router.pattern(pattern, isUnder: prefix)
            case .route(let routeMethod, let routePattern): method == routeMethod && pattern == routePattern
            }
        }
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

    /// 404, 405, a route's admission refusal, or the route's answer, labelled with its route.
    public func respond(to request: HTTPRequest, answer: HTTPResponseSink) {
        switch resolve(request) {
        case .answer(let response):
            answer(response)
        case .route(let route, var routed, let headFallback):
            for check in route.admission where !routed.isAdmitted {
                if let refusal = check(&routed) {
                    return answer(Self.finish(refusal, route: route, headFallback: headFallback))
                }
            }
            route.handler(
                routed,
                answer.map { result in
                    switch result {
                    case .success(let response):
                        return .success(Self.finish(response, route: route, headFallback: headFallback))
                    case .failure(var failure):
                        if failure.route == nil {
                            failure.route = route.pattern
                            failure.loggedPathRule = route.loggedPath
                        }
                        return .failure(failure)
                    }
                }
            )
        }
    }

    /// 404 or 405 for a request no route takes, a route's admission refusal
    /// (``admit(under:_:)``), else the route's body limit: all decided before the body is read.
    /// A `refusal` (the server's) is labelled with the route the request would have reached (and
    /// its ``logPaths(of:as:)`` rule), for metrics and the access log.
    public func admit(_ request: HTTPRequest, refusal: HTTPResponse?) -> HTTPAdmission {
        if let refusal {
            guard case .route(let route, _, _) = resolve(request) else { return .answer(refusal) }
            return .answer(Self.finish(refusal, route: route, headFallback: false))
        }
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
                    message: "nothing is served at \(request.path): check the path"
                        + (notFoundHint.map { " (\($0))" } ?? ""),
                    field: "path"
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
                message: "\(request.path) does not take \(method): use \(allow)",
                field: "method"
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
