/// Why a notification request was refused, in the API's terms: an HTTP status, a snake_case code,
/// a sentence that says what to fix and the JSON path at fault. The HTTP layer turns it into
/// `{"error": {"code", "message", "field"}}`.
///
/// Messages never quote device tokens or payload contents.
public struct NotificationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// 400 invalid input, 404 unknown id, 409 state conflict, 413 too large, 503 APNs not set up.
    public var status: Int
    public var code: String
    public var message: String
    public var field: String?

    public init(status: Int, code: String, message: String, field: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
    }

    /// 400 with `code` and `field`.
    static func invalid(_ code: String, _ message: String, field: String?) -> NotificationError {
        NotificationError(status: 400, code: code, message: message, field: field)
    }

    static func notFound(_ id: String) -> NotificationError {
        NotificationError(
            status: 404,
            code: "not_found",
            message: "no notification has the id \(id): use the id a POST /v1/notifications answered with",
            field: "id"
        )
    }

    public var description: String {
        "\(status) \(code): \(message)" + (field.map { " [\($0)]" } ?? "")
    }
}
