public import Devices
public import HTTPRouting

extension DeviceError {
    /// The HTTP status for this kind of refusal: 400 invalid input, 413 too large, 404 unknown
    /// device, 503 APNs not set up.
    public var httpStatus: Int {
        switch kind {
        case .tooLarge: 413
        case .notFound: 404
        case .unavailable: 503
        default: 400
        }
    }

    /// `{"error": {"code", "message", "field"}}` with ``httpStatus``.
    public var response: HTTPResponse {
        .error(status: httpStatus, code: code, message: message, field: field)
    }
}
