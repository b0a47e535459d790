extension APNSRequest {
    /// The `:path`: `/3/device/<lowercase token>`.
    public var path: String { "/3/device/" + deviceToken.lowercased() }

    /// The header fields, in the order they are sent.
    ///
    /// `authorization` (when given), `apns-id`, `apns-push-type`, `apns-expiration` (unless
    /// omitted), `apns-priority`, `apns-topic`, `apns-collapse-id` (when set). `apns-id` and a
    /// timestamp expiration are never indexed (unique per request); the rest repeat across requests
    /// and may be indexed (APNS.md §3).
    ///
    /// - Parameter authorization: the provider token (JWT) for token-based connections; `nil` for
    ///   certificate-based ones, which ignore the header.
    public func headers(authorization: String?) -> [APNSHTTPHeader] {
        var headers: [APNSHTTPHeader] = []
        headers.reserveCapacity(7)
        if let authorization {
            headers.append(APNSHTTPHeader(name: "authorization", value: "bearer " + authorization))
        }
        headers.append(APNSHTTPHeader(name: "apns-id", value: apnsIDHeaderValue, neverIndex: true))
        headers.append(APNSHTTPHeader(name: "apns-push-type", value: pushType.headerValue))
        if let value = expiration.headerValue {
            headers.append(
                APNSHTTPHeader(name: "apns-expiration", value: value, neverIndex: expiration != .immediately)
            )
        }
        headers.append(APNSHTTPHeader(name: "apns-priority", value: effectivePriority.headerValue))
        headers.append(APNSHTTPHeader(name: "apns-topic", value: resolvedTopic))
        if let collapseID {
            headers.append(APNSHTTPHeader(name: "apns-collapse-id", value: collapseID))
        }
        return headers
    }

    /// The HTTP/2 request: `POST` ``path`` (never indexed) with ``headers(authorization:)`` and
    /// the payload. Call ``validate()`` first; this does not check anything.
    public func httpRequest(authorization: String?) -> APNSHTTPRequest {
        APNSHTTPRequest(
            method: "POST",
            path: path,
            pathNeverIndexed: true,
            headers: headers(authorization: authorization),
            body: payload
        )
    }
}
