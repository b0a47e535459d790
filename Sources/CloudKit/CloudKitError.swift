/// A CloudKit request that failed: CloudKit's own `serverErrorCode`, `reason` and `retryAfter`
/// (from an error answer, or from one record of a `records/modify` answer), or a local problem
/// (configuration, connection, an answer that cannot be read).
///
/// ```swift
/// do { _ = try await client.createRecord(...) } catch {
///     if error.isRetryable { /* later, after error.retryAfter */ } else { print(error.reason) }
/// }
/// ```
public struct CloudKitError: Error, Sendable, Hashable, CustomStringConvertible {
    /// CloudKit's `serverErrorCode` (ErrorCodes in Apple's reference), or one of Herald's own
    /// codes for failures CloudKit did not answer.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let accessDenied = Code("ACCESS_DENIED")
        public static let atomicError = Code("ATOMIC_ERROR")
        public static let authenticationFailed = Code("AUTHENTICATION_FAILED")
        public static let authenticationRequired = Code("AUTHENTICATION_REQUIRED")
        public static let badRequest = Code("BAD_REQUEST")
        public static let conflict = Code("CONFLICT")
        public static let exists = Code("EXISTS")
        public static let internalError = Code("INTERNAL_ERROR")
        public static let notFound = Code("NOT_FOUND")
        public static let quotaExceeded = Code("QUOTA_EXCEEDED")
        public static let throttled = Code("THROTTLED")
        public static let tryAgainLater = Code("TRY_AGAIN_LATER")
        public static let validatingReferenceError = Code("VALIDATING_REFERENCE_ERROR")
        public static let zoneNotFound = Code("ZONE_NOT_FOUND")

        // Herald's own, for failures without a CloudKit answer.
        /// Settings or arguments that cannot work (a bad key, URL or container).
        public static let invalidConfiguration = Code("HERALD_INVALID_CONFIGURATION")
        /// The request never got an answer: connect, TLS or HTTP/2 failure, timeout.
        public static let connectionFailed = Code("HERALD_CONNECTION_FAILED")
        /// The answer was not CloudKit's JSON.
        public static let invalidResponse = Code("HERALD_INVALID_RESPONSE")
        /// OpenSSL failed to sign.
        public static let signingFailed = Code("HERALD_SIGNING_FAILED")
        /// The calling task was cancelled (not retryable: the caller is stopping).
        public static let cancelled = Code("HERALD_CANCELLED")
    }

    public var code: Code
    /// CloudKit's `reason`, or Herald's explanation of what to fix.
    public var reason: String
    /// The HTTP status of the answer; nil when there was none.
    public var status: Int?
    /// CloudKit's `retryAfter` (seconds), when it gave one.
    public var retryAfter: Duration?
    /// The record a per-record error is about.
    public var recordName: String?
    /// CloudKit's `uuid` of the failed request, for Apple's support.
    public var uuid: String?

    public init(
        _ code: Code,
        reason: String,
        status: Int? = nil,
        retryAfter: Duration? = nil,
        recordName: String? = nil,
        uuid: String? = nil
    ) {
        self.code = code
        self.reason = reason
        self.status = status
        self.retryAfter = retryAfter
        self.recordName = recordName
        self.uuid = uuid
    }

    /// Whether the same request may succeed later: `THROTTLED`, `TRY_AGAIN_LATER`, any 5xx answer,
    /// and a request that got no answer. `AUTHENTICATION_FAILED`, `BAD_REQUEST` and the rest need a
    /// fix first.
    public var isRetryable: Bool {
        if code == .throttled || code == .tryAgainLater || code == .connectionFailed { return true }
        if let status, (500..<600).contains(status) { return true }
        return false
    }

    public var description: String {
        var text = "CloudKit \(code.rawValue)"
        if let status { text += " (HTTP \(status))" }
        if let recordName { text += " for record \(recordName)" }
        text += ": \(reason)"
        if let retryAfter { text += "; retry after \(retryAfter.components.seconds) s" }
        return text
    }
}
