public import Foundation

/// APNs refused the request, and retrying (if allowed) did not help. Thrown by the channel
/// management calls, returned inside ``APNSSendResult`` by the sends.
public struct APNSRejection: Error, Sendable, Hashable, CustomStringConvertible {
    public var response: APNSErrorResponse
    /// Requests sent in all, including retries and a provider-token refresh.
    public var attempts: Int

    public init(response: APNSErrorResponse, attempts: Int = 1) {
        self.response = response
        self.attempts = attempts
    }

    public var status: Int { response.status }
    public var reason: APNSErrorReason { response.reason }
    public var category: APNSFailureCategory { response.category }

    /// Whether the device token will never work again and should be deleted (410, `BadDeviceToken`,
    /// `DeviceTokenNotForTopic`).
    public var isDeviceTokenInvalid: Bool { category == .deviceTokenInvalid }

    /// With a 410: when APNs learned the token was invalid. A registration newer than this wins.
    public var deviceTokenInvalidSince: Date? { isDeviceTokenInvalid ? response.timestamp : nil }

    public var description: String { "APNs refused the request: \(response) (\(category))" }
}
