public import APNs
public import Foundation

extension InMemoryAPNs {
    /// What the in-memory APNs answers one request with.
    public enum Answer: Sendable {
        /// 200 with the `apns-id` (a push), 201 with an `apns-channel-id` (a channel made).
        case success
        /// `status` with `{"reason": reason}`, `timestamp` in milliseconds when given, and
        /// `retry-after: <seconds>` when given (the client then waits exactly that long).
        case refused(Int, reason: String, timestamp: Date? = nil, retryAfter: Int? = nil)
        /// No answer: the transport throws `error` (a lost connection, a reset stream).
        case transportError(any Error & Sendable)

        /// 400 BadDeviceToken: the token is not one APNs knows for this environment.
        public static let badDeviceToken = Answer.refused(400, reason: "BadDeviceToken")
        /// 400 DeviceTokenNotForTopic.
        public static let deviceTokenNotForTopic = Answer.refused(400, reason: "DeviceTokenNotForTopic")
        /// 413 PayloadTooLarge.
        public static let payloadTooLarge = Answer.refused(413, reason: "PayloadTooLarge")
        /// 429 TooManyRequests: retried by the client.
        public static let tooManyRequests = Answer.refused(429, reason: "TooManyRequests")
        /// 500 InternalServerError: retried by the client.
        public static let internalServerError = Answer.refused(500, reason: "InternalServerError")
        /// 503 ServiceUnavailable: retried by the client.
        public static let serviceUnavailable = Answer.refused(503, reason: "ServiceUnavailable")

        /// 429 TooManyRequests with `retry-after: <seconds>`: retried after exactly that wait.
        public static func tooManyRequests(retryAfter seconds: Int) -> Answer {
            .refused(429, reason: "TooManyRequests", retryAfter: seconds)
        }

        /// 503 ServiceUnavailable with `retry-after: <seconds>`: retried after exactly that wait.
        public static func serviceUnavailable(retryAfter seconds: Int) -> Answer {
            .refused(503, reason: "ServiceUnavailable", retryAfter: seconds)
        }

        /// 410 Unregistered: the app was removed from the device at `date`.
        public static func unregistered(at date: Date) -> Answer {
            .refused(410, reason: "Unregistered", timestamp: date)
        }
    }

    /// A connection lost before the answer: the request certainly did not reach APNs when
    /// `isSafeToRetry`, so the client may send it again.
    public struct ConnectionLost: APNSRetryableError, Equatable {
        public var isSafeToRetry: Bool

        public init(isSafeToRetry: Bool = true) {
            self.isSafeToRetry = isSafeToRetry
        }
    }
}
