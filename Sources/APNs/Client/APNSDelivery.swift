public import Foundation

/// APNs accepted the request (which means it will try to deliver it, not that it arrived).
public struct APNSDelivery: Sendable, Hashable {
    /// The `apns-id` APNs answered with (device pushes).
    public var apnsID: UUID?
    /// The `apns-unique-id` (sandbox device pushes, broadcasts): the Push Notifications Console's id.
    public var uniqueID: String?
    /// The `apns-request-id` (broadcasts).
    public var requestID: UUID?
    /// Requests sent in all, including retries.
    public var attempts: Int

    public init(apnsID: UUID? = nil, uniqueID: String? = nil, requestID: UUID? = nil, attempts: Int = 1) {
        self.apnsID = apnsID
        self.uniqueID = uniqueID
        self.requestID = requestID
        self.attempts = attempts
    }

    init(_ response: APNSHTTPResponse, attempts: Int) {
        self.init(
            apnsID: response.headerValue("apns-id").flatMap(APNSIdentifier.parse),
            uniqueID: response.headerValue("apns-unique-id"),
            requestID: response.headerValue("apns-request-id").flatMap(APNSIdentifier.parse),
            attempts: attempts
        )
    }
}
