/// What sends one HTTP/2 request to APNs and returns its response: the seam between the APNs client
/// (which decides what to send, with which token, how often to retry) and the connection pool.
///
/// Implementations are bound to one host (one environment, push or management) and supply the
/// `:scheme` and `:authority` pseudo-headers (see ``APNSHTTPRequest/headerList(scheme:authority:)``).
/// A response with any status is a successful `send`; `send` throws only when no complete response
/// arrived (connection refused or lost, stream reset, timeout). Errors that are safe to send again —
/// the request certainly did not reach APNs, or APNs asked for it to be resent (GOAWAY above the
/// stream's id, `REFUSED_STREAM`) — should conform to ``APNSRetryableError``.
///
/// The client retries 503 (`ServiceUnavailable`, `Shutdown`) through the same transport; Apple asks
/// for such retries to go to another connection, so a pool should stop using a connection that
/// answered 503 or sent GOAWAY.
public protocol APNSTransport: Sendable {
    func send(_ request: APNSHTTPRequest) async throws -> APNSHTTPResponse
}
