/// One request as the APNs client hands it to an ``APNSTransport``: its method, header fields
/// and body. A device push carries its fields as ``APNSRequestHeaderFields`` (written straight
/// into the HTTP/2 header block); other requests (broadcasts, channel management) as an
/// ``APNSHTTPRequest``.
public struct APNSTransportRequest: Sendable {
    enum Fields: Sendable {
        case push(APNSRequestHeaderFields, payload: [UInt8])
        case http(APNSHTTPRequest)
    }

    let fields: Fields

    /// A request built as an ``APNSHTTPRequest``.
    public init(_ request: APNSHTTPRequest) {
        fields = .http(request)
    }

    /// A device push with `authorization: <authorizationHeaderValue>` when given.
    init(_ push: APNSRequest, authorizationHeaderValue: String?) {
        fields = .push(
            APNSRequestHeaderFields(push, authorizationHeaderValue: authorizationHeaderValue),
            payload: push.payload
        )
    }

    /// The request as method, path, header list and body (what a test transport reads).
    public var httpRequest: APNSHTTPRequest {
        switch fields {
        case .push(let fields, _): fields.httpRequest
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
        case .push(_, let payload): payload
        case .http(let request): request.body
        }
    }
}
