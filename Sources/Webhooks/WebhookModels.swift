public import Foundation

/// The kinds of event a webhook can subscribe to.
public enum WebhookEventType: String, Sendable, Hashable, CaseIterable, Codable {
    /// APNs said a device token is no longer valid (410, `BadDeviceToken`, `DeviceTokenNotForTopic`).
    case deviceInvalidated = "device.invalidated"
    /// A device token registered to one user was registered to another (a new sign-in on the phone).
    case deviceReassigned = "device.reassigned"
    /// A notification reached its final status (done, failed or cancelled).
    case notificationFinished = "notification.finished"
    /// A Live Activity started: APNs took its push-to-start, or the app starts it (at its creation).
    case liveActivityStarted = "live_activity.started"
    /// A Live Activity ended, with the reason (`api`, `end_at`, `expired`, `poll_final`).
    case liveActivityEnded = "live_activity.ended"
    /// A Live Activity failed to start, with the reason.
    case liveActivityFailed = "live_activity.failed"
    /// A poll became final, with its result and the names per option.
    case pollFinalized = "poll.finalized"
    /// A test asked for by `POST /v1/webhooks/{id}/test`: delivered to that webhook alone,
    /// whatever it subscribes to.
    case webhookTest = "webhook.test"

    /// The accepted names, for messages: `device.invalidated, device.reassigned, notification.finished, …`.
    public static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }
}

/// A registered webhook. ``secret`` is read only to sign deliveries and to answer the `POST`
/// that created it; `description` leaves it out.
public struct Webhook: Sendable, Hashable, Identifiable, CustomStringConvertible {
    public var id: UUID
    public var url: String
    /// Sorted, without duplicates.
    public var events: [WebhookEventType]
    /// The HMAC-SHA256 key: the UTF-8 bytes of this text.
    public var secret: String
    public var createdAt: Date

    public init(id: UUID, url: String, events: [WebhookEventType], secret: String, createdAt: Date) {
        self.id = id
        self.url = url
        self.events = events
        self.secret = secret
        self.createdAt = createdAt
    }

    public var description: String {
        "Webhook(id: \(id), url: \(url), events: \(events.map(\.rawValue)))"
    }
}

/// How deliveries to one webhook stand: what `GET /v1/webhooks/{id}` shows besides the webhook.
public struct WebhookDeliveryState: Sendable, Hashable {
    /// Events waiting for their first delivery or a retry.
    public var pending: Int
    /// Events given up on after the retry window.
    public var dead: Int
    /// Events the receiver accepted (2xx) so far.
    public var delivered: Int
    public var lastDeliveryAt: Date?
    /// The last failure, e.g. `HTTP 500` or `the receiver did not negotiate HTTP/2 …`.
    public var lastError: String?
    public var lastErrorAt: Date?

    public init(
        pending: Int = 0,
        dead: Int = 0,
        delivered: Int = 0,
        lastDeliveryAt: Date? = nil,
        lastError: String? = nil,
        lastErrorAt: Date? = nil
    ) {
        self.pending = pending
        self.dead = dead
        self.delivered = delivered
        self.lastDeliveryAt = lastDeliveryAt
        self.lastError = lastError
        self.lastErrorAt = lastErrorAt
    }
}

/// One event as the receiver sees it: `{"id", "type", "created_at", "data"}`. ``json`` is the
/// exact text stored in the outbox and sent in `{"events": [...]}`.
public struct WebhookEvent: Sendable, Hashable {
    /// Unique per event (not per webhook): receivers deduplicate on it.
    public var id: UUID
    public var type: WebhookEventType
    public var createdAt: Date
    /// The whole event object as JSON text.
    public var json: String
}
