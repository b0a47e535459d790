public import Foundation
import HeraldCore

/// A value in an event's `data`, written as JSON in the order given.
public enum WebhookJSONValue: Sendable {
    case string(String)
    case int(Int)
    /// An RFC 3339 UTC string.
    case date(Date)
    case null
    case object([(String, WebhookJSONValue)])
    case array([WebhookJSONValue])

    func write(to out: inout String) {
        switch self {
        case .string(let text): out += JSONText.quote(text)
        case .int(let number): out += String(number)
        case .date(let date): out += JSONText.quote(RFC3339.string(from: date, fractional: true))
        case .null: out += "null"
        case .object(let fields):
            out += "{"
            for (index, (key, value)) in fields.enumerated() {
                if index > 0 { out += "," }
                out += JSONText.quote(key) + ":"
                value.write(to: &out)
            }
            out += "}"
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        }
    }
}

extension WebhookEvent {
    /// A new event with a fresh id: `{"id", "type", "created_at", "data"}`.
    public init(type: WebhookEventType, data: [(String, WebhookJSONValue)], at createdAt: Date) {
        let id = ResourceIdentifier.next()
        var json = ""
        WebhookJSONValue.object([
            ("id", .string(RequestIdentifier.lowercaseString(id))), ("type", .string(type.rawValue)),
            ("created_at", .date(createdAt)), ("data", .object(data)),
        ]).write(to: &json)
        self.init(id: id, type: type, createdAt: createdAt, json: json)
    }

    /// `webhook.test`: what `POST /v1/webhooks/{id}/test` sends to check a receiver.
    public static func test(webhook: UUID, at now: Date) -> WebhookEvent {
        WebhookEvent(
            type: .webhookTest,
            data: [
                ("webhook_id", .string(RequestIdentifier.lowercaseString(webhook))),
                ("message", .string("a test event, sent on request: nothing happened")),
            ],
            at: now
        )
    }

    /// `device.invalidated`: APNs called the token invalid at `invalidAt` for `reason`
    /// (`Unregistered`, `BadDeviceToken`, `DeviceTokenNotForTopic`).
    public static func deviceInvalidated(
        token: String,
        app: String,
        environment: String,
        reason: String,
        invalidAt: Date,
        at now: Date
    ) -> WebhookEvent {
        WebhookEvent(
            type: .deviceInvalidated,
            data: [
                ("token", .string(token)), ("app", .string(app)), ("environment", .string(environment)),
                ("reason", .string(reason)), ("invalid_at", .date(invalidAt)),
            ],
            at: now
        )
    }

    /// `device.reassigned`: the token, registered to `fromUserID`, is now registered to `toUserID`.
    public static func deviceReassigned(
        token: String,
        app: String,
        environment: String,
        fromUserID: String,
        toUserID: String,
        at now: Date
    ) -> WebhookEvent {
        WebhookEvent(
            type: .deviceReassigned,
            data: [
                ("token", .string(token)), ("app", .string(app)), ("environment", .string(environment)),
                ("from_user_id", .string(fromUserID)), ("to_user_id", .string(toUserID)),
            ],
            at: now
        )
    }

    /// `notification.finished`: the notification's id, final status and tokens by result.
    public static func notificationFinished(
        id: UUID,
        app: String,
        environment: String,
        status: String,
        counts: [(String, Int)],
        at now: Date
    ) -> WebhookEvent {
        WebhookEvent(
            type: .notificationFinished,
            data: [
                ("id", .string(RequestIdentifier.lowercaseString(id))), ("app", .string(app)),
                ("environment", .string(environment)), ("status", .string(status)),
                ("counts", .object(counts.map { ($0.0, .int($0.1)) })),
                ("total", .int(counts.reduce(0) { $0 + $1.1 })),
            ],
            at: now
        )
    }

    /// `live_activity.started`, `live_activity.ended` and `live_activity.failed`: the activity's
    /// id, app, environment and attributes type, and for an end or a failure its `reason`.
    public static func liveActivity(
        _ type: WebhookEventType,
        id: UUID,
        app: String,
        environment: String,
        attributesType: String,
        reason: String?,
        at now: Date
    ) -> WebhookEvent {
        var data: [(String, WebhookJSONValue)] = [
            ("id", .string(RequestIdentifier.lowercaseString(id))), ("app", .string(app)),
            ("environment", .string(environment)), ("attributes_type", .string(attributesType)),
        ]
        if let reason { data.append(("reason", .string(reason))) }
        return WebhookEvent(type: type, data: data, at: now)
    }
}
