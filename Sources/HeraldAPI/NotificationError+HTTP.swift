public import HTTPRouting
public import Notifications

extension NotificationError {
    /// The HTTP status for this kind of refusal: 400 invalid input, 413 too large, 404 unknown
    /// id, 409 state conflict, 503 APNs not set up.
    public var httpStatus: Int {
        switch kind {
        case .tooLarge: 413
        case .notFound: 404
        case .conflict: 409
        case .unavailable: 503
        default: 400
        }
    }

    /// `{"error": {"code", "message", "field"}}` with ``httpStatus``.
    public var response: HTTPResponse {
        .error(status: httpStatus, code: code, message: message, field: field)
    }
}
