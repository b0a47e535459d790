public import HTTPRouting
public import Wake

extension WakeError: DomainErrorResponse {
    /// The HTTP status for this kind of refusal: 400 invalid input, 413 too large, 404 unknown
    /// id, 409 when as many schedules exist as allowed, 422 when the server lacks what the mode
    /// needs (CloudKit keys, an APNs app).
    public var httpStatus: Int {
        switch kind {
        case .tooLarge: 413
        case .notFound: 404
        case .limitReached: 409
        case .notConfigured: 422
        default: 400
        }
    }

    /// `{"error": {"code", "message", "field"}}` with ``httpStatus``.
    public var response: HTTPResponse {
        .error(status: httpStatus, code: code, message: message, field: field)
    }
}
