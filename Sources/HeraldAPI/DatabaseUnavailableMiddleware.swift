public import HTTPRouting
public import HeraldCore
public import Storage

/// Answers database failures that a retry can fix with 503 `database_unavailable` and
/// `Retry-After`, so that clients tell "try again" from "bug" (500).
///
/// Those are the ``Storage/DatabaseError/isUnavailable`` ones: SQLite busy past its timeout,
/// PostgreSQL unreachable or its connection lost, no pooled connection free in time, a statement
/// timeout. Sits inside ``HTTPServer/ErrorMiddleware``, which turns every other error into 500.
public struct DatabaseUnavailableMiddleware: HTTPMiddleware {
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
        next(
            request,
            answer.recovering { [logger] failure in
                guard let error = failure.error as? DatabaseError, error.isUnavailable else { return nil }
                logger.warning(
                    "database unavailable; answered 503",
                    metadata: [
                        "request_id": .string(requestID),
                        "method": .string(method),
                        "error": .string(String(describing: error)),
                    ]
                )
                return Self.error(for: error).response
            }
        )
    }

    /// The 503 for `error`: a second for contention (a lock, a pooled connection), five while the
    /// database is unreachable or slow. The message names the kind, never the SQL or its server text.
    public static func error(for error: DatabaseError) -> HTTPError {
        let contention = error.code == .lockTimeout || error.code == .acquireTimeout
        let seconds = contention ? 1 : 5
        let what =
            switch error.code {
            case .lockTimeout: "is busy (another writer held its lock past the busy timeout)"
            case .acquireTimeout: "is busy (every pooled connection was in use past the acquire timeout)"
            case .statementTimeout: "did not answer within the statement timeout"
            default: "cannot be reached or dropped the connection"
            }
        return HTTPError(
            status: 503,
            code: "database_unavailable",
            message: "the database \(what); retry in \(seconds) s (with the same Idempotency-Key, if you sent one)",
            headers: ["Retry-After": String(seconds)]
        )
    }
}
