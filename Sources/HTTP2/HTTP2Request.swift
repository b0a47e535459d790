/// A request for ``HTTP2ClientConnection/send(_:)``.
///
/// ```swift
/// var request = HTTP2Request(path: "/3/device/\(token)", body: Array(payload.utf8))
/// request.pathNeverIndexed = true
/// request.headers.add(name: "apns-id", value: id, neverIndex: true)
/// ```
public struct HTTP2Request: Sendable {
    /// `:method`; default `POST`.
    public var method: String
    /// `:path`.
    public var path: String
    /// Send `:path` as "never indexed" (a device token is unique per device and must not fill the
    /// peer's HPACK table). Default false.
    public var pathNeverIndexed: Bool
    /// `:authority`; nil uses the connection's (host, plus the port when not 443/80).
    public var authority: String?
    /// `:scheme`; nil uses `https` on TLS connections and `http` on cleartext ones.
    public var scheme: String?
    /// Regular header fields, in order; names are lowercased when sent.
    public var headers: HTTP2Headers
    /// The body; empty sends no DATA frame.
    public var body: [UInt8]
    /// Overrides ``HTTP2ClientConnection/Configuration/requestTimeout`` for this request; counted
    /// from when the connection takes the request, waiting for a free stream included.
    public var timeout: Duration?

    public init(
        method: String = "POST",
        path: String,
        authority: String? = nil,
        scheme: String? = nil,
        headers: HTTP2Headers = [:],
        body: [UInt8] = [],
        timeout: Duration? = nil
    ) {
        self.method = method
        self.path = path
        self.pathNeverIndexed = false
        self.authority = authority
        self.scheme = scheme
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// The answer to an ``HTTP2Request``.
public struct HTTP2Response: Sendable {
    /// `:status`.
    public var status: Int
    /// The response header fields in order (pseudo-headers excluded), trailers appended.
    public var headers: HTTP2Headers
    /// The body.
    public var body: [UInt8]

    public init(status: Int, headers: HTTP2Headers = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}
