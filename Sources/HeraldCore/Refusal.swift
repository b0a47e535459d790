/// Why a request was refused: what kind of refusal, a snake_case code clients can switch on, a
/// sentence that says what to fix and the JSON path at fault.
///
/// Each domain module names its own (`DeviceError` is `Refusal<DeviceDomain>`), so a handler
/// catches its domain's refusals and lets another's through, and a domain adds its own refusals
/// in an extension constrained to it. HeraldFeature maps ``kind`` to an HTTP status, the same for
/// every domain, and answers `{"error": {"code", "message", "field"}}`.
///
/// ```swift
/// public enum WidgetDomain: RefusalDomain {}
/// public typealias WidgetError = Refusal<WidgetDomain>
///
/// throw WidgetError.invalid("invalid_size", "size must be from 1 to 10", field: "size")
/// ```
public struct Refusal<Domain: RefusalDomain>: Error, Sendable, Hashable, CustomStringConvertible {
    public typealias Kind = RefusalKind

    public var kind: Kind
    public var code: String
    public var message: String
    public var field: String?
    /// Seconds after which the client may try again, for a refusal that may not last (APNs
    /// unavailable); `nil`: none is said.
    public var retryAfter: Int?

    public init(_ kind: Kind, code: String, message: String, field: String? = nil, retryAfter: Int? = nil) {
        self.kind = kind
        self.code = code
        self.message = message
        self.field = field
        self.retryAfter = retryAfter
    }

    /// The same refusal in this domain: for a part read by a module shared between domains
    /// (an audience), refused in the domain of the request that holds it.
    public init<Other>(_ other: Refusal<Other>) {
        self.init(
            other.kind,
            code: other.code,
            message: other.message,
            field: other.field,
            retryAfter: other.retryAfter
        )
    }

    /// Invalid input with `code` and `field`.
    public static func invalid(_ code: String, _ message: String, field: String?) -> Self {
        Self(.invalid, code: code, message: message, field: field)
    }

    /// A body or a value in it over its limit.
    public static func tooLarge(_ code: String, _ message: String, field: String?) -> Self {
        Self(.tooLarge, code: code, message: message, field: field)
    }

    public var description: String {
        "\(kind) \(code): \(message)" + (field.map { " [\($0)]" } ?? "")
    }
}

/// A domain whose refusals are a ``Refusal`` of their own: a type with no values that only names
/// it.
public protocol RefusalDomain: Sendable {}

/// What kind of refusal a ``Refusal`` is, whatever the transport that reports it.
public struct RefusalKind: Sendable, Hashable, CustomStringConvertible {
    private enum Value: String, Sendable, Hashable {
        case invalid, tooLarge = "too_large", notFound = "not_found", conflict, unprocessable, forbidden
        case unavailable, limitReached = "limit_reached", notConfigured = "not_configured"
        case upstreamRejected = "upstream_rejected"
    }

    private let value: Value

    /// The input is malformed or breaks a rule.
    public static let invalid = RefusalKind(value: .invalid)
    /// The body or a value in it is over its limit.
    public static let tooLarge = RefusalKind(value: .tooLarge)
    /// Nothing has the id or key.
    public static let notFound = RefusalKind(value: .notFound)
    /// The state of what it names does not allow it, or the id is taken by another body.
    public static let conflict = RefusalKind(value: .conflict)
    /// Well-formed but impossible now (no push-to-start token to start an activity with).
    public static let unprocessable = RefusalKind(value: .unprocessable)
    /// The credential may not touch what it names.
    public static let forbidden = RefusalKind(value: .forbidden)
    /// A service Herald called for the request (APNs) refused Herald itself, or answered what
    /// Herald cannot read: not the client's input, not a passing outage.
    public static let upstreamRejected = RefusalKind(value: .upstreamRejected)
    /// Something the request needs is down or not set up (APNs, a channel).
    public static let unavailable = RefusalKind(value: .unavailable)
    /// As many exist as are allowed.
    public static let limitReached = RefusalKind(value: .limitReached)
    /// The mode asked for needs something the server was not given (CloudKit keys, an APNs app).
    public static let notConfigured = RefusalKind(value: .notConfigured)

    public var description: String { value.rawValue }
}
