public import Devices

/// Why a notification request was refused: what kind of refusal, a snake_case code, a sentence
/// that says what to fix and the JSON path at fault. HeraldAPI maps the kind to an HTTP status
/// and answers `{"error": {"code", "message", "field"}}`.
///
/// Messages never quote device tokens or payload contents.
public struct NotificationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of refusal this is, whatever the transport that reports it.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Value: String, Sendable, Hashable {
            case invalid, tooLarge = "too_large", notFound = "not_found", conflict, unavailable
        }

        private let value: Value

        /// The input is malformed or breaks a rule.
        public static let invalid = Kind(value: .invalid)
        /// The body, the payload or the token list is over its limit.
        public static let tooLarge = Kind(value: .tooLarge)
        /// No notification has the id.
        public static let notFound = Kind(value: .notFound)
        /// The notification's state does not allow it (cancelling one that started sending).
        public static let conflict = Kind(value: .conflict)
        /// Something the request needs is not set up (no APNs app).
        public static let unavailable = Kind(value: .unavailable)

        public var description: String { value.rawValue }
    }

    public var kind: Kind
    public var code: String
    public var message: String
    public var field: String?

    public init(_ kind: Kind, code: String, message: String, field: String? = nil) {
        self.kind = kind
        self.code = code
        self.message = message
        self.field = field
    }

    /// An audience refused: too large when over a count limit, invalid otherwise.
    public init(_ error: AudienceError) {
        self.init(error.isTooLarge ? .tooLarge : .invalid, code: error.code, message: error.message, field: error.field)
    }

    /// Invalid input with `code` and `field`.
    static func invalid(_ code: String, _ message: String, field: String?) -> NotificationError {
        NotificationError(.invalid, code: code, message: message, field: field)
    }

    static func notFound(_ id: String) -> NotificationError {
        NotificationError(
            .notFound,
            code: "not_found",
            message: "no notification has the id \(id): use the id a POST /v1/notifications answered with",
            field: "id"
        )
    }

    public var description: String {
        "\(kind) \(code): \(message)" + (field.map { " [\($0)]" } ?? "")
    }
}
