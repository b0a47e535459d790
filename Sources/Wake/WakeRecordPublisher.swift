/// Where CloudKit-mode runs create their records: the app's public CloudKit database. The
/// executable passes the CloudKit client here; tests pass a fake.
public protocol WakeRecordPublisher: Sendable {
    /// Creates one record of `recordType` whose `field` holds `unixSeconds`, and returns its
    /// `recordName`.
    func createRecord(
        container: String,
        environment: WakeCloudKitEnvironment,
        recordType: String,
        field: String,
        unixSeconds: Int64
    ) async throws -> String

    /// Deletes every record of `recordType` but the newest `keep` (by `field`), and returns how
    /// many were deleted.
    func deleteOlderRecords(
        container: String,
        environment: WakeCloudKitEnvironment,
        recordType: String,
        field: String,
        keep: Int
    ) async throws -> Int
}

/// What a ``WakeRecordPublisher`` error tells the run: CloudKit's `serverErrorCode`, whether a
/// later attempt may succeed, and how long CloudKit asked to wait. Errors that do not conform are
/// treated as retryable with the code `UNKNOWN_ERROR`.
public protocol WakeCloudKitFailure: Error {
    /// CloudKit's `serverErrorCode`, such as `THROTTLED` or `AUTHENTICATION_FAILED`.
    var code: String { get }
    var isRetryable: Bool { get }
    /// CloudKit's `retryAfter`, when it gave one.
    var retryAfter: Duration? { get }
}

/// A ``WakeCloudKitFailure`` as a plain value (for publishers without an error type of their own,
/// and for tests).
public struct WakeCloudKitError: WakeCloudKitFailure, Sendable, Hashable, CustomStringConvertible {
    public var code: String
    public var reason: String
    public var isRetryable: Bool
    public var retryAfter: Duration?

    public init(code: String, reason: String = "", isRetryable: Bool, retryAfter: Duration? = nil) {
        self.code = code
        self.reason = reason
        self.isRetryable = isRetryable
        self.retryAfter = retryAfter
    }

    public var description: String { reason.isEmpty ? code : "\(code): \(reason)" }
}
