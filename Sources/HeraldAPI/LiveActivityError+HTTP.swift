public import HTTPRouting
public import LiveActivities

extension LiveActivityError: DomainErrorResponse {
    /// The HTTP status for this kind of refusal: 400 invalid input, 413 too large, 404 unknown
    /// activity, 409 state conflict, 422 impossible now, 403 not yours, 503 APNs or channel down.
    public var httpStatus: Int {
        switch kind {
        case .tooLarge: 413
        case .notFound: 404
        case .conflict: 409
        case .unprocessable: 422
        case .forbidden: 403
        case .unavailable: 503
        default: 400
        }
    }

    /// `{"error": {"code", "message", "field"}}` with ``httpStatus``.
    public var response: HTTPResponse {
        .error(status: httpStatus, code: code, message: message, field: field)
    }
}
