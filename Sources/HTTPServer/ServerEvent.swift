import HTTPRouting

/// What `HTTPServer.run()`'s loop reacts to, from libmicrohttpd's threads and from the API.
enum ServerEvent: Sendable {
    /// A request is complete and its connection suspended: answer it in a child task.
    case request(PendingRequest)
    /// ``HTTPServer/triggerGracefulShutdown()`` was called.
    case shutdown
    /// While draining, the last in-flight request finished.
    case drained
    /// While draining, ``HTTPServer/Configuration/shutdownTimeout`` passed.
    case drainTimedOut
}

/// A request handed from libmicrohttpd to Swift, with the context to resume when answered.
struct PendingRequest: Sendable {
    let context: RequestContext
    let request: HTTPRequest
}
