extension APNSRequest {
    /// The `:path`: `/3/device/<lowercase token>`.
    public var path: String {
        let token = deviceToken.utf8
        return String(unsafeUninitializedCapacity: 10 + token.count) { out in
            let prefix: StaticString = "/3/device/"
            prefix.withUTF8Buffer { prefix in
                _ = UnsafeMutableRawBufferPointer(out).initializeMemory(as: UInt8.self, from: prefix)
            }
            let tail = UnsafeMutableBufferPointer(rebasing: out[prefix.utf8CodeUnitCount...])
            func lowercase(_ bytes: some Collection<UInt8>) -> Int {
                var index = 0
                for byte in bytes {
                    tail[index] = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
                    index += 1
                }
                return index
            }
            let written = token.withContiguousStorageIfAvailable(lowercase) ?? lowercase(token)
            return prefix.utf8CodeUnitCount + written
        }
    }

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
        headers(authorizationHeaderValue: authorization.map { "bearer " + $0 })
    }

    /// ``headers(authorization:)`` with the whole `authorization` value (`bearer <token>`), which
    /// the client keeps per token.
    func headers(authorizationHeaderValue: String?) -> [APNSHTTPHeader] {
        var headers: [APNSHTTPHeader] = []
        headers.reserveCapacity(7)
        if let authorizationHeaderValue {
            headers.append(APNSHTTPHeader(name: "authorization", value: authorizationHeaderValue))
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
        httpRequest(authorizationHeaderValue: authorization.map { "bearer " + $0 })
    }

    /// ``httpRequest(authorization:)`` with the whole `authorization` value.
    func httpRequest(authorizationHeaderValue: String?) -> APNSHTTPRequest {
        APNSHTTPRequest(
            method: "POST",
            path: path,
            pathNeverIndexed: true,
            headers: headers(authorizationHeaderValue: authorizationHeaderValue),
            body: payload
        )
    }
}
