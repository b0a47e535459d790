/// An HTTP/2 request as the APNs client hands it to an ``APNSTransport``: what to send, not where.
/// The transport supplies `:scheme` and `:authority` for the host it is connected to.
public struct APNSHTTPRequest: Sendable, Hashable, CustomStringConvertible {
    /// `POST`, `GET` or `DELETE`.
    public var method: String
    /// The `:path`, e.g. `/3/device/<token>`.
    public var path: String
    /// Whether `:path` is unique per request (it carries a device token) and must not enter the
    /// HPACK dynamic table.
    public var pathNeverIndexed: Bool
    /// Regular header fields (no pseudo-headers), in the order to send them.
    public var headers: [APNSHTTPHeader]
    /// The body; empty for `GET` and `DELETE`.
    public var body: [UInt8]

    public init(
        method: String,
        path: String,
        pathNeverIndexed: Bool = false,
        headers: [APNSHTTPHeader] = [],
        body: [UInt8] = []
    ) {
        self.method = method
        self.path = path
        self.pathNeverIndexed = pathNeverIndexed
        self.headers = headers
        self.body = body
    }

    /// The complete HTTP/2 header list: the pseudo-headers `:method`, `:scheme`, `:authority`,
    /// `:path` (in that order, as RFC 9113 requires them before regular fields), then ``headers``.
    ///
    /// - Parameters:
    ///   - scheme: `https` for APNs.
    ///   - authority: the host (and port when not the scheme's default) the connection goes to.
    public func headerList(scheme: String, authority: String) -> [APNSHTTPHeader] {
        [
            APNSHTTPHeader(name: ":method", value: method),
            APNSHTTPHeader(name: ":scheme", value: scheme),
            APNSHTTPHeader(name: ":authority", value: authority),
            APNSHTTPHeader(name: ":path", value: path, neverIndex: pathNeverIndexed),
        ] + headers
    }

    public var description: String {
        let fields = headers.map(\.description).joined(separator: ", ")
        return "\(method) \(path) [\(fields)] \(body.count) bytes"
    }
}
