/// Why a client token was refused: a ``Reason`` clients can switch on and a sentence saying what to
/// fix. Neither ever holds the token or any part of it.
public struct ClientTokenError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The refusal's kind, sent as the error `code` of the 401. A struct of static members rather
    /// than an enum, so that a reason added later does not break a caller's `switch`.
    public struct Reason: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String

        public init(rawValue: String) { self.rawValue = rawValue }

        /// A reason this version does not name, e.g. one read back from a log or a metric label.
        public static func unknown(_ rawValue: String) -> Reason { Reason(rawValue: rawValue) }

        /// Neither HERALD_CLIENT_TOKEN_SECRET nor HERALD_CLIENT_TOKEN_KEYS_FILE is set.
        public static let notConfigured = Reason(rawValue: "client_tokens_unset")
        /// No `Authorization: Bearer <token>` header.
        public static let missing = Reason(rawValue: "missing")
        /// Not three base64url parts of JSON objects, or longer than ``ClientTokenLimits/maximumTokenBytes``.
        public static let malformed = Reason(rawValue: "malformed")
        /// An `alg` other than HS256 or ES256 (including `none`), or one this server has no key for.
        public static let unsupportedAlgorithm = Reason(rawValue: "unsupported_algorithm")
        /// An ES256 token whose `kid` is absent or names no key of HERALD_CLIENT_TOKEN_KEYS_FILE.
        public static let unknownKey = Reason(rawValue: "unknown_key")
        /// The signature does not verify with the key the header selects.
        public static let badSignature = Reason(rawValue: "bad_signature")
        /// `exp` passed more than the allowed clock skew ago.
        public static let expired = Reason(rawValue: "expired")
        /// `nbf` or `iat` lies further in the future than the allowed clock skew.
        public static let notYetValid = Reason(rawValue: "not_yet_valid")
        /// `aud` does not name this server's audience.
        public static let wrongAudience = Reason(rawValue: "wrong_audience")
        /// `exp` lies more than ``ClientTokenLimits/maximumLifetime`` after `iat`.
        public static let lifetimeTooLong = Reason(rawValue: "lifetime_too_long")
        /// A required claim (`sub`, `exp`, `iat`, `aud`) is absent.
        public static let missingClaim = Reason(rawValue: "missing_claim")
        /// A claim has the wrong type or a value out of bounds.
        public static let invalidClaim = Reason(rawValue: "invalid_claim")
        /// The token's `app` claim limits it to another app than the request names.
        public static let wrongApp = Reason(rawValue: "wrong_app")
        /// The token has no `app` claim where one is needed: the server serves several apps, or
        /// its kid is bound to several.
        public static let appClaimRequired = Reason(rawValue: "app_claim_required")
        /// The token's `app` claim names an app its kid is not bound to (HERALD_CLIENT_TOKEN_KEYS_FILE).
        public static let appNotAllowedForKey = Reason(rawValue: "app_not_allowed_for_key")

        /// Every reason this version names, for metric labels and documentation.
        public static let all: [Reason] = [
            .notConfigured, .missing, .malformed, .unsupportedAlgorithm, .unknownKey, .badSignature, .expired,
            .notYetValid, .wrongAudience, .lifetimeTooLong, .missingClaim, .invalidClaim, .wrongApp,
            .appClaimRequired, .appNotAllowedForKey,
        ]

        public var description: String { rawValue }
    }

    public let reason: Reason
    /// What is wrong and what to do about it; safe to send to the client and to log.
    public let message: String

    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    public var description: String { "ClientTokenError(\(reason): \(message))" }
}
