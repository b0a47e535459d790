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
        next: @Sendable (HTTPRequest) async throws -> HTTPResponse
    ) async throws -> HTTPResponse {
        do {
            return try await next(request)
        } catch let error as HTTPError {
            return error.response
        } catch {
            if Task.isCancelled {
                // The server is stopping and gave up on this request; nobody will read the answer.
                logger.notice("request cancelled", metadata: ["request_id": .string(request.requestID)])
                return Self.internalError
            }
            logger.error(
                "request failed",
                metadata: [
                    "request_id": .string(request.requestID),
                    "method": .string(request.method),
                    "route": .string(RouteRecorder.label(for: nil)),
                    "error": .string(String(describing: error)),
                    "error_type": .string(String(describing: type(of: error))),
                ]
            )
            return Self.internalError
        }
    }

    /// Immediate handlers cannot throw: nothing to translate.
    public func handleImmediately(_ request: HTTPRequest, next: (HTTPRequest) -> HTTPResponse?) -> HTTPResponse? {
        next(request)
    }

    /// The response for an error that is not an ``HTTPError``.
    package static var internalError: HTTPResponse {
        .error(status: 500, code: "internal_error", message: "The server failed to handle this request.")
    }
}
