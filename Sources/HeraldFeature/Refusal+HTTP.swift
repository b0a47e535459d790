public import HTTPRouting
public import HeraldCore

/// A domain error that a feature's route answers with a response of its own (status, code,
/// message, field): ``FeatureAssembly`` turns one a handler throws into that response.
public protocol DomainErrorResponse: Error {
    var response: HTTPResponse { get }
}

extension Refusal: DomainErrorResponse {
    /// The HTTP status for this kind of refusal, in every API: 400 invalid input, 413 too large,
    /// 404 unknown id or key, 409 a state that does not allow it or a limit reached, 422
    /// impossible now or not configured for it, 403 not the credential's, 502 refused or
    /// garbled by a service Herald called on the client's behalf (APNs), 503 APNs (or what else
    /// the request needs) down or not set up.
    public var httpStatus: Int {
        switch kind {
        case .tooLarge: 413
        case .notFound: 404
        case .conflict, .limitReached: 409
        case .unprocessable, .notConfigured: 422
        case .forbidden: 403
        case .upstreamRejected: 502
        case .unavailable: 503
        default: 400
        }
    }

    /// `{"error": {"code", "message", "field"}}` with ``httpStatus``, and `Retry-After` when
    /// ``HeraldCore/Refusal/retryAfter`` is set.
    public var response: HTTPResponse {
        var response = HTTPResponse.error(status: httpStatus, code: code, message: message, field: field)
        if let retryAfter { response.headers.replaceOrAdd(name: "Retry-After", value: String(retryAfter)) }
        return response
    }
}
