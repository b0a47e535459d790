/// One request as the APNs client hands it to an ``APNSTransport``: its method, header fields
/// and body. A device push carries its ``APNSRequest`` and `authorization` value, whose
/// ``APNSRequestHeaderFields`` the connection pool writes straight into the HTTP/2 header block;
/// other requests (broadcasts, channel management) as an
/// ``APNSHTTPRequest``.
public struct APNSTransportRequest: Sendable {
    /// A push keeps only its request and `authorization` value (two references), so that
    /// passing it along is cheap; the transport derives the header fields where it writes them.
    package enum Fields: Sendable {
        case push(APNSRequest, authorization: String?)
        case http(APNSHTTPRequest)
    }

    package let fields: Fields

    /// A request built as an ``APNSHTTPRequest``.
    public init(_ request: APNSHTTPRequest) {
        fields = .http(request)
    }

    /// A device push with `authorization: <authorizationHeaderValue>` when given.
    init(_ push: APNSRequest, authorizationHeaderValue: String?) {
        fields = .push(push, authorization: authorizationHeaderValue)
    }

    /// The request as method, path, header list and body (what a test transport reads).
    public var httpRequest: APNSHTTPRequest {
        switch fields {
        case .push(let push, let authorization):
            APNSRequestHeaderFields(push, authorizationHeaderValue: authorization).httpRequest
        case .http(let request): request
        }
    }

    var method: String {
        switch fields {
        case .push: "POST"
        case .http(let request): request.method
        }
    }

    var body: [UInt8] {
        switch fields {
        case .push(let push, _): push.payload
        case .http(let request): request.body
        }
    }
}
