import HTTPRouting

/// What `HTTPServer.run()`'s loop reacts to, from libmicrohttpd's threads and from the API.
enum ServerEvent: Sendable {
    /// Work a responder started for a request (``HTTPResponseSink/answer(by:)``): run it in a
    /// child task, which shutdown cancels.
    case run(@Sendable () async -> Void)
    /// ``HTTPServer/triggerGracefulShutdown()`` was called.
    case shutdown
    /// While draining, the last in-flight request finished.
    case drained
    /// While draining, ``HTTPServer/Configuration/shutdownTimeout`` passed.
    case drainTimedOut
}
