public import APNs

/// Why a device request was refused: what kind of refusal, a snake_case code, a sentence that
/// says what to fix and the JSON path at fault. HeraldAPI maps the kind to an HTTP status and
/// answers `{"error": {"code", "message", "field"}}`.
///
/// Messages never quote device tokens.
public struct DeviceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of refusal this is, whatever the transport that reports it.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Value: String, Sendable, Hashable {
            case invalid, tooLarge = "too_large", notFound = "not_found", unavailable
        }

        private let value: Value

        /// The input is malformed or breaks a rule.
        public static let invalid = Kind(value: .invalid)
        /// The body or a list in it is over its limit.
        public static let tooLarge = Kind(value: .tooLarge)
        /// No device has the key.
        public static let notFound = Kind(value: .notFound)
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

    /// Invalid input with `code` and `field`.
    public static func invalid(_ code: String, _ message: String, field: String?) -> DeviceError {
        DeviceError(.invalid, code: code, message: message, field: field)
    }

    /// No device with this token in the app and environment.
    public static func notFound(app: String, environment: APNSEnvironment) -> DeviceError {
        DeviceError(
            .notFound,
            code: "not_found",
            message: "no device with this token is registered for \(app) (\(environment.rawValue)): "
                + "register it with PUT /v1/devices/{token}, or check app and environment",
            field: "token"
        )
    }

    /// The refusal for an app or environment that could not be resolved, as `/v1/notifications` words it.
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
