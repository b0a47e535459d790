public import HeraldCore

/// Turns errors thrown further in into responses:
///
/// - ``HTTPError``: its status, JSON error body and headers.
/// - anything else: 500 `internal_error` with a generic message; the error itself is logged at
///   `error` with the request id, never sent to the client.
public struct ErrorMiddleware: HTTPMiddleware {
    public var logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    public func handle(
        _ request: HTTPRequest,
        answer: HTTPResponseSink,
        next: (HTTPRequest, HTTPResponseSink) -> Void
    ) {
        let requestID = request.requestID
        let method = request.method
        next(request, answer.recovering { [logger] in Self.response(for: $0, requestID, method, logger) })
    }

    /// The response for `failure`, logging what is not an ``HTTPError``. Runs in the task that
    /// failed, so that a cancelled one (the server stopping) is told apart.
    private static func response(
        for failure: HTTPFailure,
        _ requestID: String,
        _ method: String,
        _ logger: Logger
    ) -> HTTPResponse {
        if let error = failure.error as? HTTPError { return error.response }
        if Task.isCancelled {
            // The server is stopping and gave up on this request; nobody will read the answer.
            logger.notice("request cancelled", metadata: ["request_id": .string(requestID)])
            return internalError
        }
        logger.error(
            "request failed",
            metadata: [
                "request_id": .string(requestID),
                "method": .string(method),
                "route": .string(failure.route ?? "unmatched"),
                "error": .string(String(describing: failure.error)),
                "error_type": .string(String(describing: type(of: failure.error))),
            ]
        )
        return internalError
    }

    /// The response for an error that is not an ``HTTPError``.
    package static var internalError: HTTPResponse {
        .error(status: 500, code: "internal_error", message: "The server failed to handle this request.")
    }
}
