public import HeraldCore

/// Logs exactly one line per request at `info`, after the response is known:
/// `method`, `route`, `path` (as the response or its route says to show it: ``HTTPResponse/loggedPath``),
/// `status`, `duration_ms`, `bytes` (body bytes of the response, 0 for HEAD), `request_id`,
/// `remote`, and for an error answer its `error_code` (``HTTPResponse/errorCode``).
///
/// Headers (which may carry `Authorization`), the query string and the body are never logged.
/// When `next` throws (no ``ErrorMiddleware`` inside), the line says status 500 and the error is
/// rethrown.
public struct AccessLogMiddleware: HTTPMiddleware {
    public var logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    public func handle(
        _ request: HTTPRequest,
        answer: HTTPResponseSink,
        next: (HTTPRequest, HTTPResponseSink) -> Void
    ) {
        // The metadata below is built eagerly; skip it all when the line would be dropped.
        guard logger.logLevel <= .info else { return next(request, answer) }
        let start = ContinuousClock.now
        next(
            request,
            answer.map { [self] result in
                log(request, result, since: start)
                return result
            }
        )
    }

    private func log(_ request: HTTPRequest, _ result: HTTPResult, since start: ContinuousClock.Instant) {
        let response = try? result.get()
        let (seconds, attoseconds) = start.duration(to: .now).components
        let milliseconds = Double(seconds) * 1000 + Double(attoseconds) / 1e15
        var metadata: [(key: String, value: LogValue)] = [
            ("bytes", .int(response?.body.count ?? 0)),
            ("duration_ms", .double((milliseconds * 1000).rounded() / 1000)),
        ]
        // A refusal says which: the error code is what a client reads, and carries no secrets.
        if let response, response.status >= 400, let code = response.errorCode {
            metadata.append(("error_code", .string(code)))
        }
        logger.log(
            .info,
            "request",
            sortedMetadata: metadata + [
                ("method", .string(request.method)),
                ("path", .string(RouteLabel.loggedPath(of: request, answeredWith: result))),
                ("remote", .string(request.remoteAddress)),
                ("request_id", .string(request.requestID)),
                ("route", .string(RouteLabel.label(for: result))),
                ("status", .int(response?.status ?? 500)),
            ]
        )
    }
}
