import Synchronization

/// Turns a request into a response: a ``Router``, or anything else that answers requests.
///
/// There is one way to run a request: ``respond(to:answer:)`` is called on the server's I/O
/// thread with the request and a one-shot ``HTTPResponseSink``, and answers through it exactly
/// once, from any thread. A responder that knows the answer at once gives it before returning,
/// and the server sends it without suspending the connection or hopping to a task; one that must
/// wait answers later, from a callback, or from a task it starts with
/// ``HTTPResponseSink/answer(by:)``.
public protocol HTTPResponder: Sendable {
    /// Answers `request` through `answer`, exactly once, from any thread.
    ///
    /// Runs on one of the server's I/O threads: it must not block (no locks held for long, no
    /// I/O, no waiting). Work that must wait goes to a task (``HTTPResponseSink/answer(by:)``)
    /// or to a callback that answers when it comes.
    func respond(to request: HTTPRequest, answer: HTTPResponseSink)

    /// Decides from the request line and headers alone, before any byte of the body is read:
    /// answer now (the server then sends the answer and closes the connection instead of reading
    /// the body), or read a body of at most the given size. `request` has an empty body.
    ///
    /// With a `refusal`, the server has refused the request already (headers or body too large,
    /// an unusable target; `request` may then lack parts the server could not read): the
    /// responder answers with that refusal, labelled as it labels its own answers (its route),
    /// so that middleware logs and counts it like any other. Runs on an I/O thread; must not
    /// block.
    func admit(_ request: HTTPRequest, refusal: HTTPResponse?) -> HTTPAdmission
}

/// What ``HTTPResponder/admit(_:refusal:)`` decided from a request's headers.
public enum HTTPAdmission: Sendable {
    /// Read the body, up to `maxBodySize` bytes (`nil`: the server's limit), and hand the
    /// request to its handler with `principal`, who the admission checks found it to come from
    /// (``HTTPRequest/principal``).
    case readBody(maxBodySize: Int?, principal: (any Sendable)? = nil)
    /// Answer with this response without reading the body (a 401, 404 or 405, say).
    case answer(HTTPResponse)
}

extension HTTPResponder {
    /// Every request may send its body, up to the server's limit; a refusal is sent unchanged.
    public func admit(_ request: HTTPRequest, refusal: HTTPResponse?) -> HTTPAdmission {
        refusal.map { .answer($0) } ?? .readBody(maxBodySize: nil)
    }

    /// ``admit(_:refusal:)`` for a request the server has not refused.
    public func admit(_ request: HTTPRequest) -> HTTPAdmission {
        admit(request, refusal: nil)
    }

    /// The server's refusal of `request` as this responder answers it
    /// (``admit(_:refusal:)``).
    public func refused(_ request: HTTPRequest, with response: HTTPResponse) -> HTTPResponse {
        guard case .answer(let labelled) = admit(request, refusal: response) else { return response }
        return labelled
    }

    /// Runs ``respond(to:answer:)`` and waits for its answer, for code that holds a request
    /// outside the server (tests, fuzzing). A task the responder starts runs in the caller's
    /// task when it is started before ``respond(to:answer:)`` returns, so that it sees the
    /// caller's cancellation and task-local values.
    ///
    /// - Throws: the error an async handler threw, when no middleware turned it into a response.
    public func respond(to request: HTTPRequest) async throws -> HTTPResponse {
        let outcome = AwaitedAnswer()
        let inline = InlineSpawner()
        respond(to: request, answer: HTTPResponseSink(spawn: inline.spawn) { outcome.deliver($0) })
        if let work = inline.close() { await work() }
        switch await outcome.value() {
        case .success(let response): return response
        case .failure(let failure): throw failure.error
        }
    }
}

/// What answering a request came to: the response, or the error an async handler threw.
public typealias HTTPResult = Result<HTTPResponse, HTTPFailure>

/// An error an async handler threw (``HTTPResponseSink/answer(by:)``), with the route it was
/// thrown on, so that middleware turning it into a response (``ErrorMiddleware``) and middleware
/// counting it label it by route.
public struct HTTPFailure: Error {
    /// What the handler threw.
    public let error: any Error
    /// The route pattern the request reached; `nil` when none did.
    public internal(set) var route: String?
    /// The route's ``Router/logPaths(of:as:)`` rule.
    var loggedPathRule: LoggedPathRule?

    /// `error`, or the failure it already is.
    public init(_ error: any Error) {
        if let failure = error as? HTTPFailure {
            self = failure
        } else {
            self.error = error
        }
    }

    /// `response` labelled with this failure's route, as the router labels its own answers.
    public func labelling(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        if response.route == nil {
            response.route = route
            response.loggedPathRule = loggedPathRule
        }
        return response
    }
}

/// Where a responder answers a request: exactly once, from any thread, synchronously if it can.
///
/// ```swift
/// router.on("GET", "/healthz", answering: { request, answer in
///     answer(.json(["status": "ok"]))
/// })
/// router.on("POST", "/work", answering: { request, answer in
///     answer.answer(by: { try await work(request) })   // in a task, its errors mapped by middleware
/// })
/// ```
public struct HTTPResponseSink: Sendable {
    /// Runs work in a task: the server's (so that stopping it cancels the work), or the caller's.
    public typealias Spawner = @Sendable (@escaping @Sendable () async -> Void) -> Void

    private let deliver: @Sendable (HTTPResult) -> Void
    private let spawner: Spawner

    /// A sink that passes the answer to `deliver` and starts tasks with `spawn`.
    public init(spawn: @escaping Spawner, _ deliver: @escaping @Sendable (HTTPResult) -> Void) {
        self.deliver = deliver
        self.spawner = spawn
    }

    /// Answers with `response`.
    public func callAsFunction(_ response: HTTPResponse) {
        deliver(.success(response))
    }

    /// Answers with `result` (a failure goes to the middleware that maps errors).
    public func finish(_ result: HTTPResult) {
        deliver(result)
    }

    /// Answers with what `handler` returns or throws, run in a task: how a route written as an
    /// async function is answered.
    public func answer(by handler: @escaping @Sendable () async throws -> HTTPResponse) {
        let deliver = self.deliver
        spawner {
            let result: HTTPResult
            do {
                result = .success(try await handler())
            } catch {
                result = .failure(HTTPFailure(error))
            }
            deliver(result)
        }
    }

    /// A sink that answers a failure with the response `respond` gives for it (labelled with the
    /// failure's route), and passes on every other result, and a failure `respond` leaves (`nil`):
    /// how middleware turns errors into responses.
    public func recovering(_ respond: @escaping @Sendable (HTTPFailure) -> HTTPResponse?) -> HTTPResponseSink {
        map { result in
            guard case .failure(let failure) = result, let response = respond(failure) else { return result }
            return .success(failure.labelling(response))
        }
    }

    /// A sink that changes the answer with `transform` before passing it here: how middleware
    /// sees and changes the answer when it comes.
    public func map(_ transform: @escaping @Sendable (HTTPResult) -> HTTPResult) -> HTTPResponseSink {
        let deliver = self.deliver
        return HTTPResponseSink(spawn: spawner) { deliver(transform($0)) }
    }
}

/// The answer ``HTTPResponder/respond(to:)`` waits for.
private final class AwaitedAnswer: Sendable {
    private let state = Mutex<(result: HTTPResult?, waiter: CheckedContinuation<HTTPResult, Never>?)>((nil, nil))

    func deliver(_ result: HTTPResult) {
        let waiter = state.withLock { state -> CheckedContinuation<HTTPResult, Never>? in
            guard state.result == nil else { return nil }  // answered twice: the first answer stands
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: result)
    }

    /// The answer, if it came already.
    func peek() -> HTTPResult? {
        state.withLock { $0.result }
    }

    func value() async -> HTTPResult {
        await withCheckedContinuation { continuation in
            let result = state.withLock { state -> HTTPResult? in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let result { continuation.resume(returning: result) }
        }
    }
}

/// Keeps the task a responder starts while ``HTTPResponder/respond(to:)`` runs it, to be run in
/// the caller's task; one started afterwards (from a callback) gets a task of its own.
private final class InlineSpawner: Sendable {
    private let state = Mutex<(open: Bool, work: (@Sendable () async -> Void)?)>((true, nil))

    func spawn(_ work: @escaping @Sendable () async -> Void) {
        let kept = state.withLock { state -> Bool in
            guard state.open, state.work == nil else { return false }
            state.work = work
            return true
        }
        // Started from a callback once `respond(to:)` has its answer sink out: no caller's task is
        // left to run it in, and the caller waits for the answer, not for this task.
        if !kept { Task { await work() } }
    }

    func close() -> (@Sendable () async -> Void)? {
        state.withLock { state in
            state.open = false
            defer { state.work = nil }
            return state.work
        }
    }
}

/// Code that runs around a responder: it may change the request, answer by itself, or pass the
/// request on and change the answer when it comes.
///
/// ```swift
/// struct ServerHeader: HTTPMiddleware {
///     func handle(
///         _ request: HTTPRequest,
///         answer: HTTPResponseSink,
///         next: (HTTPRequest, HTTPResponseSink) -> Void
///     ) {
///         next(request, answer.map { result in
///             result.map { response in
///                 var response = response
///                 response.headers.replaceOrAdd(name: "Server", value: "herald")
///                 return response
///             }
///         })
///     }
/// }
/// ```
public protocol HTTPMiddleware: Sendable {
    /// Answers `request` through `answer`, or passes it on to `next` (before returning) with
    /// `answer` or a sink mapped from it. Runs where ``HTTPResponder/respond(to:answer:)`` runs,
    /// on an I/O thread: must not block. The answer may come from any thread.
    func handle(_ request: HTTPRequest, answer: HTTPResponseSink, next: (HTTPRequest, HTTPResponseSink) -> Void)
}

/// A responder wrapped in middleware, the first element outermost. ``HTTPServer`` answers with
/// one; tests can use it to run a router and middleware without a socket.
public struct MiddlewareChain: HTTPResponder {
    private let responder: any HTTPResponder
    /// The middleware as a chain of immutable nodes: each layer is reached through a `let` of the
    /// node before it, so that running a request through the chain copies no middleware out of
    /// an array (a retain and a release of each middleware's fields, which every server thread
    /// shares, per layer per request).
    private let chain: Layer?

    public init(middleware: [any HTTPMiddleware], responder: any HTTPResponder) {
        self.responder = responder
        var chain: Layer?
        for layer in middleware.reversed() {
            chain = Layer(middleware: layer, next: chain)
        }
        self.chain = chain
    }

    /// One middleware of ``MiddlewareChain`` and what follows it.
    private final class Layer: Sendable {
        let middleware: any HTTPMiddleware
        let next: Layer?

        init(middleware: any HTTPMiddleware, next: Layer?) {
            self.middleware = middleware
            self.next = next
        }

        func run(
            _ request: HTTPRequest,
            _ answer: HTTPResponseSink,
            innermost: (HTTPRequest, HTTPResponseSink) -> Void
        ) {
            middleware.handle(request, answer: answer) { request, answer in
                guard let next else { return innermost(request, answer) }
                next.run(request, answer, innermost: innermost)
            }
        }
    }

    /// Runs every middleware around the responder.
    public func respond(to request: HTTPRequest, answer: HTTPResponseSink) {
        guard let chain else { return responder.respond(to: request, answer: answer) }
        chain.run(request, answer) { request, answer in responder.respond(to: request, answer: answer) }
    }

    /// The wrapped responder's decision; an answer goes through the middleware (as the responder
    /// labels it), so that it is logged, counted and given a request id. When the middleware does
    /// not answer at once, the answer is sent as the responder gave it.
    public func admit(_ request: HTTPRequest, refusal: HTTPResponse?) -> HTTPAdmission {
        switch responder.admit(request, refusal: refusal) {
        case .readBody(let limit, let principal):
            return .readBody(maxBodySize: limit, principal: principal)
        case .answer(let response):
            guard let chain else { return .answer(response) }
            let answered = AwaitedAnswer()
            chain.run(request, HTTPResponseSink(spawn: { _ in }) { answered.deliver($0) }) { _, answer in
                answer(response)
            }
            guard case .success(let final)? = answered.peek() else { return .answer(response) }
            return .answer(final)
        }
    }
}
