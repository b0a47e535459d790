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
    /// Sends `request` and waits for the response. Cancelling the task gives the request up.
    func send(_ request: APNSTransportRequest) async throws -> APNSTransportResponse

    /// Hands `request` to a connection now, without waiting, or refuses it at once (then nothing
    /// was sent and `completion` is never called): when no connection can take it without
    /// connecting first, or the transport is shut down.
    ///
    /// `completion` gets the response or the error exactly once, on the transport's I/O thread
    /// (the event loop thread of the connection the request went to), so it must not block.
    func submit(
        _ request: APNSTransportRequest,
        completion: @escaping @Sendable (Result<APNSTransportResponse, any Error>) -> Void
    ) -> APNSSendRefusal?

    /// Gets ready to take requests: opens a connection if there is none.
    func prepare() async throws
}

extension APNSTransport {
    /// Sends a request built as an ``APNSHTTPRequest`` and returns the whole response.
    public func send(_ request: APNSHTTPRequest) async throws -> APNSHTTPResponse {
        try await send(APNSTransportRequest(request)).httpResponse
    }
}
