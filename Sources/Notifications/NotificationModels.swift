public import APNs
public import Audiences
import Devices
public import Foundation

/// Where a notification is in its life.
///
/// ```
/// scheduled ──due, picked up──▶ sending ──every token has a final result──▶ done
///     │                            └──── app no longer configured, or attempts used up ──▶ failed
///     └──DELETE──▶ cancelled (its tokens without a result too)
/// ```
public enum NotificationStatus: String, Sendable, Hashable, CaseIterable, Codable {
    case scheduled
    case sending
    case done
    case cancelled
    case failed
}

/// What happened to one device token of a notification.
///
/// `pending` and `retrying` are not final: a later attempt sends them (again). The others are.
public enum DeliveryStatus: String, Sendable, Hashable, CaseIterable, Codable {
    /// Not sent yet.
    case pending
    /// APNs accepted it (`apns_id` says which request).
    case sent
    /// APNs refused it for a reason that retrying does not fix (`reason` says which).
    case rejected
    /// The token is no longer valid (410, `BadDeviceToken`, `DeviceTokenNotForTopic`); its device is
    /// also marked invalid in the registry (`/v1/dead-tokens`).
    case dead
    /// A retryable failure (429, 5xx, connection trouble) after the client's own retries; the
    /// notification's job runs again later for these.
    case retrying
    /// Still failing when the job's attempts were used up.
    case failed
    /// Not sent: the notification was cancelled first.
    case cancelled

    /// Whether no later attempt sends this token again.
    public var isFinal: Bool {
        switch self {
        case .pending, .retrying: false
        case .sent, .rejected, .dead, .failed, .cancelled: true
        }
    }
}

/// A stored notification: what to send, to whom (in ``NotificationStore``), and when.
public struct StoredNotification: Sendable, Hashable {
    public var id: UUID
    /// The app's bundle ID.
    public var app: String
    public var environment: APNSEnvironment
    public var pushType: APNSPushType
    /// The `apns-topic` sent.
    public var topic: String
    public var priority: APNSPriority?
    public var expiration: APNSExpiration
    public var collapseID: String?
    /// The JSON payload, as sent.
    public var payload: String
    public var sendAt: Date
    public var status: NotificationStatus
    /// Devices resolved so far: the tokens given, or for an audience resolved at send time the
    /// devices read from the registry until now (``audienceResolvedAt`` says when that is final).
    public var tokenCount: Int
    /// What kind of audience it goes to (the stored audience itself: ``NotificationStore/audience(id:)``).
    public var audienceKind: AudienceKind = .tokens
    /// When every device of the audience was resolved: at creation for tokens, when the send read
    /// the registry's last page otherwise; `nil` while devices remain to be read.
    public var audienceResolvedAt: Date?
    /// Why a `failed` notification failed.
    public var failureReason: String?
    public var jobID: UUID?
    public var createdAt: Date
    public var updatedAt: Date
}

/// The result of one token.
public struct DeliveryResult: Sendable, Hashable {
    public var token: String
    public var ordinal: Int
    public var status: DeliveryStatus
    /// APNs' reason for a refusal, or the error for a retryable failure.
    public var reason: String?
    /// The `apns-id` APNs answered with.
    public var apnsID: String?
    /// For a dead token: when APNs says it became invalid (410's timestamp), else when Herald
    /// learned it.
    public var invalidAt: Date?
    /// Requests sent for this token, including the client's retries.
    public var attempts: Int
    public var updatedAt: Date

    public init(
        token: String,
        ordinal: Int,
        status: DeliveryStatus,
        reason: String? = nil,
        apnsID: String? = nil,
        invalidAt: Date? = nil,
        attempts: Int = 0,
        updatedAt: Date
    ) {
        self.token = token
        self.ordinal = ordinal
        self.status = status
        self.reason = reason
        self.apnsID = apnsID
        self.invalidAt = invalidAt
        self.attempts = attempts
        self.updatedAt = updatedAt
    }
}

/// How many tokens of a notification are in each ``DeliveryStatus``.
public struct DeliveryCounts: Sendable, Hashable {
    public var counts: [DeliveryStatus: Int] = [:]

    public init(counts: [DeliveryStatus: Int] = [:]) {
        self.counts = counts
    }

    public subscript(status: DeliveryStatus) -> Int { counts[status] ?? 0 }

    public var total: Int { counts.values.reduce(0, +) }
}
