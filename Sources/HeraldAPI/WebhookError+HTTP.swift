public import HTTPRouting
public import Webhooks

extension WebhookError {
    /// The HTTP status for this kind of refusal: 400 invalid input, 413 too large, 404 unknown
    /// id, 409 when as many webhooks exist as allowed.
    public var httpStatus: Int {
        switch kind {
        case .tooLarge: 413
        case .notFound: 404
        case .limitReached: 409
        default: 400
        }
    }

    /// `{"error": {"code", "message", "field"}}` with ``httpStatus``.
    public var response: HTTPResponse {
        .error(status: httpStatus, code: code, message: message, field: field)
    }
}
