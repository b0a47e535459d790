public import APNs

/// Why a Live Activities request was refused: what kind of refusal, a snake_case code, a sentence
/// that says what to fix and the JSON path at fault. HeraldAPI maps the kind to an HTTP status and
/// answers `{"error": {"code", "message", "field"}}`. Messages never quote whole tokens.
public struct LiveActivityError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of refusal this is, whatever the transport that reports it.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Value: String, Sendable, Hashable {
            case invalid, tooLarge = "too_large", notFound = "not_found", conflict, unprocessable, forbidden
            case unavailable
        }

        private let value: Value

        /// The input is malformed or breaks a rule.
        public static let invalid = Kind(value: .invalid)
        /// The body or a value in it is over its limit.
        public static let tooLarge = Kind(value: .tooLarge)
        /// No activity has the id.
        public static let notFound = Kind(value: .notFound)
        /// The activity's state does not allow it, or the id is taken by another body.
        public static let conflict = Kind(value: .conflict)
        /// Well-formed but impossible now (no push-to-start token to start with).
        public static let unprocessable = Kind(value: .unprocessable)
        /// The credential may not touch this activity.
        public static let forbidden = Kind(value: .forbidden)
        /// Something the request needs is down or not set up (APNs, a channel).
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

    /// Invalid input with `code` and `field`.
    public static func invalid(_ code: String, _ message: String, field: String?) -> LiveActivityError {
        LiveActivityError(.invalid, code: code, message: message, field: field)
    }

    /// A value over its limit.
    public static func tooLarge(_ code: String, _ message: String, field: String?) -> LiveActivityError {
        LiveActivityError(.tooLarge, code: code, message: message, field: field)
    }

    /// No activity with this id.
    public static let notFound = LiveActivityError(
        .notFound,
        code: "not_found",
        message: "no Live Activity has this id: create it with POST /v1/live-activities",
        field: "id"
    )

    /// An update or end for an activity that is not running.
    public static func notStarted(_ state: LiveActivityState) -> LiveActivityError {
        LiveActivityError(
            .conflict,
            code: "not_started",
            message: "the activity is \(state.rawValue): only a started activity takes updates and ends"
        )
    }

    /// The refusal for an app or environment that could not be resolved.
    public init(_ error: APNSAppResolutionError) {
        switch error {
        case .noApps: self.init(.unavailable, code: "apns_not_configured", message: error.message)
        case .unknownApp: self = .invalid("unknown_app", error.message, field: "app")
        case .environmentNotServed: self = .invalid("invalid_environment", error.message, field: "environment")
        }
    }

    public var description: String {
        "\(kind) \(code): \(message)" + (field.map { " [\($0)]" } ?? "")
    }
}
