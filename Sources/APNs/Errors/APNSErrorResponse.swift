public import Foundation
import HeraldCore

/// A response other than success, read into what a sender needs: status, reason, the 410
/// timestamp, ids, and a `Retry-After` when present.
public struct APNSErrorResponse: Sendable, Hashable, CustomStringConvertible {
    public var status: Int
    /// ``APNSErrorReason/unknown`` when the body had no readable reason.
    public var reason: APNSErrorReason
    /// With 410: when the token became invalid.
    public var timestamp: Date?
    /// The `apns-id` response header (device pushes).
    public var apnsID: UUID?
    /// The `apns-request-id` response header (broadcasts, channel management).
    public var requestID: UUID?
    /// The `Retry-After` header in seconds, when present (Apple does not document it).
    public var retryAfter: Duration?

    public init(
        status: Int,
        reason: APNSErrorReason,
        timestamp: Date? = nil,
        apnsID: UUID? = nil,
        requestID: UUID? = nil,
        retryAfter: Duration? = nil
    ) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
        self.apnsID = apnsID
        self.requestID = requestID
        self.retryAfter = retryAfter
    }

    /// Reads a response; the status is kept whatever the body holds.
    public init(_ response: APNSHTTPResponse) {
        let body = APNSErrorBody(parsing: response.body)
        self.init(
            status: response.status,
            reason: body.reason ?? .unknown,
            timestamp: body.timestamp,
            apnsID: response.headerValue("apns-id").flatMap(UUID.init(uuidString:)),
            requestID: response.headerValue("apns-request-id").flatMap(UUID.init(uuidString:)),
            retryAfter: response.headerValue("retry-after").flatMap(Self.retryAfterSeconds)
        )
    }

    /// What the refusal means; see ``APNSErrorReason/category(status:)``.
    public var category: APNSFailureCategory { reason.category(status: status) }

    public var description: String {
        var text = "\(status) \(reason)"
        if let timestamp { text += " since \(EpochTime.milliseconds(timestamp))ms" }
        return text
    }

    private static func retryAfterSeconds(_ value: String) -> Duration? {
        guard let seconds = Int(value.trimmingCharacters(in: .whitespaces)), (0...86_400).contains(seconds) else {
            return nil
        }
        return .seconds(seconds)
    }
}
