/// What carries requests to APNs: the seam between the APNs client (which decides what to send,
/// with which token, how often to retry, and how many pushes may wait) and the connection pool,
/// its only production implementation. Tests may put a fake behind it.
///
/// Implementations are bound to one host (one environment, push or management) and supply the
/// `:scheme` and `:authority` pseudo-headers. A response with any status is a success; an error
/// means no complete response arrived (connection refused or lost, stream reset, timeout). Errors
/// that are safe to send again — the request certainly did not reach APNs, or APNs asked for it
/// to be resent (GOAWAY above the stream's id, `REFUSED_STREAM`) — should conform to
/// ``APNSRetryableError``.
///
/// The client retries 503 (`ServiceUnavailable`, `Shutdown`) through the same transport; Apple asks
/// for such retries to go to another connection, so a pool should stop using a connection that
/// answered 503 or sent GOAWAY.
///
/// Transports are classes (or actors): the client holds one as a reference, which copies with a
/// retain rather than through an existential box.
public protocol APNSTransport: AnyObject, Sendable {
    /// Sends `request`; `completion` gets the response or the error exactly once.
    ///
    /// The one way a request goes out. It is always taken: when no connection can carry it at
    /// once (none open yet, all busy while another may open, a connection lost under it), the
    /// transport connects or sends it again on another connection first, and `completion` comes
    /// later; once the transport is shut down, `completion` gets the error at once.
    ///
    /// `completion` runs on the transport's I/O thread (the event loop of the connection that
    /// answered), or on the calling thread when the answer is known at once, or in a task of the
    /// transport's own when it had to connect first; it must not block. Awaiting callers use
    /// ``send(_:)-(APNSTransportRequest)``, the same call with a continuation around it.
    func send(
        _ request: APNSTransportRequest,
        completion: @escaping @Sendable (Result<APNSTransportResponse, any Error>) -> Void
    )

    /// True when a request sent now goes onto a live connection at once (rather than waiting for
    /// a connect, or failing because none can be opened): for a sender that must answer its own
    /// caller only once a push is on its way, such as the relay.
    var isReady: Bool { get }

    /// Gets ready to take requests: opens a connection if there is none.
    ///
    /// - Throws: the transport's error when no connection can be opened.
    func prepare() async throws
}

extension APNSTransport {
    /// ``send(_:completion:)``, awaiting the answer: the same call, with a continuation around it.
    ///
    /// Once handed over, the request is not withdrawn when the task is cancelled: it ends with
    /// APNs' answer or its request timeout.
    public func send(_ request: APNSTransportRequest) async throws -> APNSTransportResponse {
        try Task.checkCancellation()
        return try await withUnsafeThrowingContinuation { continuation in
            send(request) { continuation.resume(with: $0) }
        }
    }

    /// Sends a request built as an ``APNSHTTPRequest`` and returns the whole response.
    public func send(_ request: APNSHTTPRequest) async throws -> APNSHTTPResponse {
        try await send(APNSTransportRequest(request)).httpResponse
    }
}
