/// Turns a request into a response: a ``Router``, or anything else that answers requests.
public protocol HTTPResponder: Sendable {
    func respond(to request: HTTPRequest) async throws -> HTTPResponse
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
/// }
/// ```
public protocol HTTPMiddleware: Sendable {
    func handle(
        _ request: HTTPRequest,
        next: @Sendable (HTTPRequest) async throws -> HTTPResponse
    ) async throws -> HTTPResponse
}

/// A responder wrapped in middleware, the first element outermost. ``HTTPServer`` answers with
/// one; tests can use it to run a router and middleware without a socket.
public struct MiddlewareChain: HTTPResponder {
    private let entry: @Sendable (HTTPRequest) async throws -> HTTPResponse

    public init(middleware: [any HTTPMiddleware], responder: any HTTPResponder) {
        var next: @Sendable (HTTPRequest) async throws -> HTTPResponse = { request in
            try await responder.respond(to: request)
        }
        for layer in middleware.reversed() {
            let inner = next
            next = { request in try await layer.handle(request, next: inner) }
        }
        self.entry = next
    }

    public func respond(to request: HTTPRequest) async throws -> HTTPResponse {
        try await RouteRecorder.withRecorder {
            try await entry(request)
        }
    }
}
