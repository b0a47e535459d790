/// Why a wake schedule request was refused: what kind of refusal, a snake_case code, a sentence
/// that says what to fix and the JSON path at fault. HeraldAPI maps the kind to an HTTP status and
/// answers `{"error": {"code", "message", "field"}}`.
public struct WakeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of refusal this is, whatever the transport that reports it.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Value: String, Sendable, Hashable {
            case invalid, tooLarge = "too_large", notFound = "not_found", limitReached = "limit_reached"
            case notConfigured = "not_configured"
        }

        private let value: Value

        /// The input is malformed or breaks a rule.
        public static let invalid = Kind(value: .invalid)
        /// The body or a part of it is over its limit.
        public static let tooLarge = Kind(value: .tooLarge)
        /// No schedule has the id.
        public static let notFound = Kind(value: .notFound)
        /// As many schedules exist as are allowed.
        public static let limitReached = Kind(value: .limitReached)
        /// The mode needs something the server was not given (CloudKit keys, an APNs app).
        public static let notConfigured = Kind(value: .notConfigured)

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

    /// Invalid input with `code` and `field`.
    static func invalid(_ code: String, _ message: String, field: String?) -> WakeError {
        WakeError(.invalid, code: code, message: message, field: field)
    }

    public var description: String {
        "\(kind) \(code): \(message)" + (field.map { " [\($0)]" } ?? "")
    }
}
