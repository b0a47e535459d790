extension APNSRequest {
    /// The `:path`: `/3/device/<lowercase token>`.
    public var path: String {
        APNSRequestHeaderFields(self, authorizationHeaderValue: nil).httpRequest.path
    }

    /// The header fields, in the order they are sent (see ``APNSRequestHeaderFields``, which
    /// builds them for every transport).
    ///
    /// `authorization` (when given), `apns-id`, `apns-push-type`, `apns-expiration` (unless
    /// omitted), `apns-priority`, `apns-topic`, `apns-collapse-id` (when set). `apns-id` and a
    /// timestamp expiration are never indexed (unique per request); the rest repeat across requests
    /// and may be indexed (APNS.md §3).
    ///
    /// - Parameter authorization: the provider token (JWT) for token-based connections; `nil` for
    ///   certificate-based ones, which ignore the header.
    public func headers(authorization: String?) -> [APNSHTTPHeader] {
        httpRequest(authorization: authorization).headers
    }

    /// The HTTP/2 request: `POST` ``path`` (never indexed) with ``headers(authorization:)`` and
    /// the payload. Call ``validate()`` first; this does not check anything.
    public func httpRequest(authorization: String?) -> APNSHTTPRequest {
        APNSRequestHeaderFields(self, authorizationHeaderValue: authorization.map { "bearer " + $0 }).httpRequest
    }
}
