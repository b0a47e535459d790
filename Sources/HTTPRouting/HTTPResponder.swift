/// Turns a request into a response: a ``Router``, or anything else that answers requests.
///
/// A responder may also answer *immediately*: synchronously, on the server's I/O thread, before
/// the connection is handed to Swift concurrency. That saves the suspend, the task hop and the
/// resume for requests that need no waiting (a health check, a relay push handed to a live
/// connection). ``respondImmediately(to:)`` returns `nil` whenever it cannot answer at once, and
/// the server then calls ``respond(to:)``; the default implementation always returns `nil`.
public protocol HTTPResponder: Sendable {
    func respond(to request: HTTPRequest) async throws -> HTTPResponse

    /// The response, computed at once without blocking, or `nil` to have the request answered by
    /// ``respond(to:)``.
    ///
    /// Runs on one of the server's I/O threads: it must not block (no locks held for long, no
    /// I/O, no waiting), and when it returns `nil` it must have changed nothing, because the same
    /// request is then given to ``respond(to:)``.
    func respondImmediately(to request: HTTPRequest) -> HTTPResponse?

    /// Takes a request that ``respondImmediately(to:)`` declined, to answer it later without a
    /// task: `true` when it did, and then calls `completion` exactly once, from any thread (it
    /// may do so before this returns), with the answer; `false`, having changed nothing, to have
    /// ``respond(to:)`` answer instead. Runs on one of the server's I/O threads; must not block.
    func respondLater(to request: HTTPRequest, completion: @escaping @Sendable (HTTPResponse) -> Void) -> Bool

    /// The largest body accepted for `method` (upper case) on `rawPath` (still percent-encoded),
    /// or `nil` for the server's ``HTTPServer/Configuration/maxBodySize``. Asked on an I/O thread
    /// once the headers are in, before any byte of the body is kept; must not block.
    func maximumBodySize(method: String, rawPath: String) -> Int?

    /// The answer to a request the server refused before it reached the responder (headers or
    /// body too large, an unusable target), so that middleware logs and counts it like any other
    /// answer. `request` has no body and may lack parts the server could not read. Runs on an
    /// I/O thread; must not block.
    func refused(_ request: HTTPRequest, with response: HTTPResponse) -> HTTPResponse

    /// Decides from the request line and headers alone, before any byte of the body is read:
    /// answer now (the server then sends the answer and closes the connection instead of reading
    /// the body), or read a body of at most the given size. `request` has an empty body. Runs on
    /// an I/O thread; must not block.
    func admit(_ request: HTTPRequest) -> HTTPAdmission
}

/// What ``HTTPResponder/admit(_:)`` decided from a request's headers.
public enum HTTPAdmission: Sendable {
    /// Read the body, up to `maxBodySize` bytes (`nil`: the server's limit), and hand the
    /// request to its handler with `principal`, who the admission checks found it to come from
    /// (``HTTPRequest/principal``).
    case readBody(maxBodySize: Int?, principal: (any Sendable)? = nil)
    /// Answer with this response without reading the body (a 401, 404 or 405, say).
    case answer(HTTPResponse)
}

extension HTTPResponder {
    /// Never answers immediately: every request goes to ``respond(to:)``.
    public func respondImmediately(to request: HTTPRequest) -> HTTPResponse? { nil }

    /// Never answers later: every request it declines goes to ``respond(to:)``.
    public func respondLater(
        to request: HTTPRequest,
        completion: @escaping @Sendable (HTTPResponse) -> Void
    ) -> Bool { false }

    /// The server's limit for every request.
    public func maximumBodySize(method: String, rawPath: String) -> Int? { nil }

    /// The server's refusal, unchanged.
    public func refused(_ request: HTTPRequest, with response: HTTPResponse) -> HTTPResponse { response }

    /// Every request may send its body, up to ``maximumBodySize(method:rawPath:)``.
    public func admit(_ request: HTTPRequest) -> HTTPAdmission {
        .readBody(maxBodySize: maximumBodySize(method: request.method, rawPath: request.rawPath))
    }
}

/// Code that runs around a responder: it may change the request, answer by itself, or change
/// the response that `next` returns.
///
/// ```swift
/// struct ServerHeader: HTTPMiddleware {
///     func handle(
///         _ request: HTTPRequest,
///         next: @Sendable (HTTPRequest) async throws -> HTTPResponse
///     ) async throws -> HTTPResponse {
///         var response = try await next(request)
///         response.headers.replaceOrAdd(name: "Server", value: "herald")
///         return response
///     }
///
///     func handleImmediately(
///         _ request: HTTPRequest,
///         next: (HTTPRequest) -> HTTPResponse?
///     ) -> HTTPResponse? {
///         guard var response = next(request) else { return nil }
///         response.headers.replaceOrAdd(name: "Server", value: "herald")
///         return response
///     }
/// }
/// ```
///
/// A middleware that does not implement ``handleImmediately(_:next:)`` sends every request down
/// the asynchronous path (see ``HTTPResponder/respondImmediately(to:)``), which is always correct.
public protocol HTTPMiddleware: Sendable {
    func handle(
        _ request: HTTPRequest,
        next: @Sendable (HTTPRequest) async throws -> HTTPResponse
    ) async throws -> HTTPResponse

    /// The synchronous twin of ``handle(_:next:)``, for responses computed at once on the
    /// server's I/O thread: do what `handle` does around `next`, without blocking. When `next`
    /// returns `nil`, return `nil` having recorded nothing (the request then goes through
    /// ``handle(_:next:)``); return `nil` too when this middleware itself must wait.
    func handleImmediately(_ request: HTTPRequest, next: (HTTPRequest) -> HTTPResponse?) -> HTTPResponse?
}

extension HTTPMiddleware {
    /// Never answers immediately: requests through this middleware always take the
    /// asynchronous path.
    public func handleImmediately(_ request: HTTPRequest, next: (HTTPRequest) -> HTTPResponse?) -> HTTPResponse? {
        nil
    }
}

/// A responder wrapped in middleware, the first element outermost. ``HTTPServer`` answers with
/// one; tests can use it to run a router and middleware without a socket.
public struct MiddlewareChain: HTTPResponder {
    private let entry: @Sendable (HTTPRequest) async throws -> HTTPResponse
    private let responder: any HTTPResponder
    /// The same middleware as a chain of immutable nodes, for the synchronous paths: each layer
    /// is reached through a `let` of the node before it, so that running a request through the
    /// chain copies no middleware out of an array (a retain and a release of each middleware's
    /// fields, which every server thread shares, per layer per request).
    private let immediateChain: ImmediateLayer?

    public init(middleware: [any HTTPMiddleware], responder: any HTTPResponder) {
        var next: @Sendable (HTTPRequest) async throws -> HTTPResponse = { request in
            try await responder.respond(to: request)
        }
        for layer in middleware.reversed() {
            let inner = next
            next = { request in try await layer.handle(request, next: inner) }
        }
        self.entry = next
        self.responder = responder
        var chain: ImmediateLayer?
        for layer in middleware.reversed() {
            chain = ImmediateLayer(middleware: layer, next: chain, responder: responder)
        }
        self.immediateChain = chain
    }

    /// One middleware of ``MiddlewareChain``'s synchronous chain and what follows it.
    private final class ImmediateLayer: Sendable {
        let middleware: any HTTPMiddleware
        let next: ImmediateLayer?
        let responder: any HTTPResponder

        init(middleware: any HTTPMiddleware, next: ImmediateLayer?, responder: any HTTPResponder) {
            self.middleware = middleware
            self.next = next
            self.responder = responder
        }

        func respondImmediately(to request: HTTPRequest) -> HTTPResponse? {
            middleware.handleImmediately(request) { request in
                guard let next else { return responder.respondImmediately(to: request) }
                return next.respondImmediately(to: request)
            }
        }

        func refused(_ request: HTTPRequest, _ response: HTTPResponse) -> HTTPResponse? {
            middleware.handleImmediately(request) { request in
                guard let next else { return responder.refused(request, with: response) }
                return next.refused(request, response)
            }
        }
    }

    public func respond(to request: HTTPRequest) async throws -> HTTPResponse {
        try await RouteRecorder.withRecorder {
            try await entry(request)
        }
    }

    /// Runs every middleware's ``HTTPMiddleware/handleImmediately(_:next:)`` around the
    /// responder's ``HTTPResponder/respondImmediately(to:)``; `nil` as soon as one of them cannot
    /// answer at once.
    public func respondImmediately(to request: HTTPRequest) -> HTTPResponse? {
        guard let immediateChain else { return responder.respondImmediately(to: request) }
        return immediateChain.respondImmediately(to: request)
    }

    /// The wrapped responder's later answer, run through every middleware's
    /// ``HTTPMiddleware/handleImmediately(_:next:)`` when it comes (as ``refused(_:with:)``
    /// does), so that it is logged, counted and given a request id.
    public func respondLater(
        to request: HTTPRequest,
        completion: @escaping @Sendable (HTTPResponse) -> Void
    ) -> Bool {
        responder.respondLater(to: request) { [self] response in completion(refused(request, with: response)) }
    }

    /// The wrapped responder's limit (middleware does not change what a route accepts).
    public func maximumBodySize(method: String, rawPath: String) -> Int? {
        responder.maximumBodySize(method: method, rawPath: rawPath)
    }

    /// Runs every middleware's ``HTTPMiddleware/handleImmediately(_:next:)`` around the server's
    /// refusal (as the responder labels it), so that it is logged, counted and given a request id.
    /// A middleware that cannot answer immediately is skipped with the layers inside it.
    public func refused(_ request: HTTPRequest, with response: HTTPResponse) -> HTTPResponse {
        immediateChain?.refused(request, response) ?? responder.refused(request, with: response)
    }

    /// The wrapped responder's decision; an answer goes through the middleware like a refusal
    /// (``refused(_:with:)``), so that it is logged, counted and given a request id.
    public func admit(_ request: HTTPRequest) -> HTTPAdmission {
        switch responder.admit(request) {
        case .readBody(let limit, let principal): return .readBody(maxBodySize: limit, principal: principal)
        case .answer(let response): return .answer(refused(request, with: response))
        }
    }
}
