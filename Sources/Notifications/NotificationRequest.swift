public import APNs
public import Audiences
import Devices
public import Foundation
public import HeraldCore

/// The limits on `POST /v1/notifications`.
public enum NotificationLimits {
    /// The largest request body: 10,000 tokens of the longest allowed length (200 characters)
    /// plus a 5 KB payload fit with room to spare.
    public static let maximumBodyBytes = 4 << 20
    /// Tokens per notification.
    public static let maximumTokens = AudienceLimits.maximumTokens
    /// Tokens per notification sent with `?wait=true`.
    public static let maximumWaitTokens = 1_000
    /// Nesting of arrays and objects in the body (the payload included).
    public static let maximumDepth = 32
    /// Bytes of `app` and `topic`.
    public static let maximumNameBytes = 255
    /// How far ahead `send_at` may be.
    public static let maximumScheduleAhead: TimeInterval = 366 * 24 * 3_600
    /// How far in the past `send_at` may be (clock skew); it is then sent at once.
    public static let pastTolerance: TimeInterval = 300
    /// Unix seconds above this (the year 5138) are taken for milliseconds sent by mistake and
    /// refused with a hint about units.
    public static let millisecondsThreshold: Int64 = 100_000_000_000
}

/// A validated `POST /v1/notifications` body. Which app and environment it goes to is resolved
/// by ``NotificationService`` against the configured apps.
///
/// Who it goes to is `tokens` or an `audience` (``Audience``), exactly one of the two:
///
/// ```json
/// {"app": "com.example.app", "environment": "production", "tokens": ["<hex>", …],
///  "push_type": "alert", "priority": 10, "expiration": 0, "collapse_id": "score",
///  "topic": "com.example.app", "payload": {"aps": {"alert": "Hi"}}, "send_at": "2030-01-01T00:00:00Z"}
/// ```
public struct NotificationRequest: Sendable, Hashable {
    /// The bundle ID of a configured app; `nil`: the default app.
    public var app: String?
    /// `nil`: the app's environment (production for apps that serve both).
    public var environment: APNSEnvironment?
    /// Who it goes to: the body's `audience`, or its top-level `tokens` as a tokens audience.
    public var audience: Audience
    public var pushType: APNSPushType
    public var priority: APNSPriority?
    public var expiration: APNSExpiration
    /// `apns-collapse-id`. When `nil`, an `alert` push gets one derived from the notification's
    /// id (so that a resent duplicate replaces the first on the device), unless
    /// ``collapseIDOptedOut``.
    public var collapseID: String?
    /// The body said `"collapse_id": null`: send no `apns-collapse-id` at all.
    public var collapseIDOptedOut: Bool
    /// An explicit `apns-topic`; `nil`: the app's bundle ID with the push type's suffix.
    public var topic: String?
    /// The payload as JSON text, as it will be sent.
    public var payload: [UInt8]
    /// `nil`: send now.
    public var sendAt: Date?

    /// The tokens of a tokens audience (lowercase, unique, in the order given); empty for an
    /// audience resolved when the send runs.
    public var tokens: [String] {
        get {
            if case .tokens(let tokens) = audience { return tokens }
            return []
        }
        set { audience = .tokens(newValue) }
    }

    public init(
        app: String? = nil,
        environment: APNSEnvironment? = nil,
        tokens: [String],
        pushType: APNSPushType = .alert,
        priority: APNSPriority? = nil,
        expiration: APNSExpiration = .omitted,
        collapseID: String? = nil,
        collapseIDOptedOut: Bool = false,
        topic: String? = nil,
        payload: [UInt8],
        sendAt: Date? = nil
    ) {
        self.init(
            app: app,
            environment: environment,
            audience: .tokens(tokens),
            pushType: pushType,
            priority: priority,
            expiration: expiration,
            collapseID: collapseID,
            collapseIDOptedOut: collapseIDOptedOut,
            topic: topic,
            payload: payload,
            sendAt: sendAt
        )
    }

    public init(
        app: String? = nil,
        environment: APNSEnvironment? = nil,
        audience: Audience,
        pushType: APNSPushType = .alert,
        priority: APNSPriority? = nil,
        expiration: APNSExpiration = .omitted,
        collapseID: String? = nil,
        collapseIDOptedOut: Bool = false,
        topic: String? = nil,
        payload: [UInt8],
        sendAt: Date? = nil
    ) {
        self.app = app
        self.environment = environment
        self.audience = audience
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.collapseIDOptedOut = collapseIDOptedOut
        self.topic = topic
        self.payload = payload
        self.sendAt = sendAt
    }

    /// The `apns-collapse-id` a notification with id `id` is sent with: its own, or for an
    /// `alert` without one (and not opted out) the notification's id, 36 bytes.
    public func effectiveCollapseID(notificationID id: UUID) -> String? {
        if let collapseID { return collapseID }
        guard pushType == .alert, !collapseIDOptedOut else { return nil }
        return RequestIdentifier.lowercaseString(id)
    }

    static let knownFields: Set<String> = [
        "app", "environment", "tokens", "audience", "push_type", "priority", "expiration", "collapse_id", "topic",
        "payload",
        "send_at",
    ]

    /// Parses and validates a request body. Every rule APNs would enforce per push is checked
    /// here, once, so that nothing is accepted that APNs must refuse.
    ///
    /// - Parameter now: the time `send_at` is checked against.
    /// - Throws: ``NotificationError``, invalid (too large for a payload or token list over its limit),
    ///   naming the field.
    public static func parse(_ body: [UInt8], now: Date) throws(NotificationError) -> NotificationRequest {
        guard body.count <= NotificationLimits.maximumBodyBytes else {
            throw NotificationError(
                .tooLarge,
                code: "body_too_large",
                message: "the body is \(body.count) bytes: send at most \(NotificationLimits.maximumBodyBytes) "
                    + "(split the tokens over several notifications)"
            )
        }
        var object = try Reader(
            body: body,
            maximumDepth: NotificationLimits.maximumDepth,
            what: "a notification",
            example: "{\"tokens\": […], \"payload\": {…}}"
        )
        try object.rejectUnknown(knownFields)

        let app = try optionalName(&object, "app", what: "the bundle ID of a configured app")
        var environment: APNSEnvironment?
        if let name = try object.string("environment") {
            guard name == "production" || name == "sandbox", let parsed = APNSEnvironment(name: name) else {
                throw .invalid(
                    "invalid_environment",
                    "environment must be \"production\" or \"sandbox\"",
                    field: "environment"
                )
            }
            environment = parsed
        }
        let audience = try parseAudience(&object)

        var pushType = APNSPushType.alert
        if let name = try object.string("push_type") {
            do {
                pushType = try APNSPushType(validating: name)
            } catch {
                throw .invalid("invalid_push_type", error.message, field: "push_type")
            }
        }
        var priority: APNSPriority?
        if let number = try object.integer("priority", in: 1...10, message: "priority must be 10, 5 or 1") {
            guard let parsed = APNSPriority(rawValue: Int(number)) else {
                throw .invalid("invalid_priority", "priority must be 10, 5 or 1", field: "priority")
            }
            priority = parsed
        }
        let expiration = try parseExpiration(object.value("expiration"))
        let collapseID = try object.string("collapse_id")
        let topic = try optionalName(&object, "topic", what: "the exact apns-topic, or omit it to use the app's")
        let payload = try parsePayload(object.value("payload"))
        let sendAt = try parseSendAt(object.value("send_at"), now: now)
        try object.finish()

        let request = NotificationRequest(
            app: app,
            environment: environment,
            audience: audience,
            pushType: pushType,
            priority: priority,
            expiration: expiration,
            collapseID: collapseID,
            collapseIDOptedOut: object.members["collapse_id"] == .null,
            topic: topic,
            payload: payload,
            sendAt: sendAt
        )
        try request.validateForAPNs()
        return request
    }

    /// The reader of notification bodies.
    typealias Reader = JSONObjectReader<NotificationDomain>

    /// The checks ``APNSClient`` would make on each push, made once on a sample request.
    func validateForAPNs() throws(NotificationError) {
        let sample = APNSRequest(
            deviceToken: tokens.first ?? String(repeating: "0", count: 64),
            pushType: pushType,
            topic: .explicit(topic ?? "com.example.validation"),
            payload: payload,
            expiration: expiration,
            priority: priority,
            collapseID: collapseID
        )
        do {
            try sample.validate()
        } catch {
            let field: String
            switch error.field {
            case "device_token": field = "tokens[0]"
            case "topic": field = "topic"
            default: field = error.field
            }
            let kind: NotificationError.Kind = error.code == .payloadTooLarge ? .tooLarge : .invalid
            throw NotificationError(kind, code: error.code.description, message: error.message, field: field)
        }
    }

    // MARK: Fields

    /// The body's `audience`, or its top-level `tokens` (as today): exactly one of the two.
    private static func parseAudience(_ object: inout Reader) throws(NotificationError) -> Audience {
        let tokens = object.value("tokens")
        let audience = object.value("audience")
        do throws(AudienceError) {
            switch (tokens, audience) {
            case (let tokens?, nil):
                return .tokens(try Audience.parseTokens(tokens, field: "tokens"))
            case (nil, let audience?):
                return try Audience.parse(audience, field: "audience")
            case (.some, .some):
                throw .invalid(
                    "tokens_and_audience",
                    "the body has both tokens and audience: send one of them, the tokens alone or "
                        + "{\"audience\": {\"tokens\": […]}}",
                    field: "audience"
                )
            case (nil, nil):
                throw .invalid(
                    "missing_field",
                    "tokens is missing: list 1 to 10,000 device tokens, or send an audience "
                        + "({\"users\": […]}, {\"tags\": {\"any\": […]}}, {\"all\": true})",
                    field: "tokens"
                )
            }
        } catch {
            throw NotificationError(error)
        }
    }

    private static func parsePayload(_ value: JSONValue?) throws(NotificationError) -> [UInt8] {
        guard let value else {
            throw .invalid(
                "missing_field",
                "payload is missing: send the APNs JSON payload, e.g. {\"aps\": {\"alert\": \"Hello\"}}",
                field: "payload"
            )
        }
        guard case .object = value, let bytes = try? value.jsonBytes() else {
            throw .invalid("invalid_payload", "payload must be a JSON object such as {\"aps\": {…}}", field: "payload")
        }
        return bytes
    }

    private static func parseExpiration(_ value: JSONValue?) throws(NotificationError) -> APNSExpiration {
        guard let value else { return .omitted }
        if let seconds = Reader.wholeNumber(value) {
            if seconds == 0 { return .immediately }
            if seconds > NotificationLimits.millisecondsThreshold {
                throw .invalid("invalid_expiration", millisecondsHint("expiration", seconds), field: "expiration")
            }
            guard seconds > 0, seconds <= EpochTime.maximumSeconds else {
                throw .invalid(
                    "invalid_expiration",
                    "expiration must be 0 (do not store), Unix seconds up to \(EpochTime.maximumSeconds) "
                        + "(the end of year 9999) or an RFC 3339 time",
                    field: "expiration"
                )
            }
            return .at(Date(timeIntervalSince1970: TimeInterval(seconds)))
        }
        if case .string(let text) = value, let date = RFC3339.date(from: text) {
            return .at(date)
        }
        throw .invalid(
            "invalid_expiration",
            "expiration must be 0 (do not store), Unix seconds or an RFC 3339 time such as 2030-01-01T00:00:00Z",
            field: "expiration"
        )
    }

    private static func parseSendAt(_ value: JSONValue?, now: Date) throws(NotificationError) -> Date? {
        guard let value else { return nil }
        let date: Date
        if let seconds = Reader.wholeNumber(value) {
            if seconds > NotificationLimits.millisecondsThreshold {
                throw .invalid("invalid_send_at", millisecondsHint("send_at", seconds), field: "send_at")
            }
            date = Date(timeIntervalSince1970: TimeInterval(seconds))
        } else if case .string(let text) = value, let parsed = RFC3339.date(from: text) {
            date = parsed
        } else {
            throw .invalid(
                "invalid_send_at",
                "send_at must be an RFC 3339 time such as 2030-01-01T09:00:00Z or Unix seconds",
                field: "send_at"
            )
        }
        if date < now.addingTimeInterval(-NotificationLimits.pastTolerance) {
            throw .invalid(
                "invalid_send_at",
                "send_at is in the past: omit it to send now, or give a later time",
                field: "send_at"
            )
        }
        if date > now.addingTimeInterval(NotificationLimits.maximumScheduleAhead) {
            throw .invalid(
                "invalid_send_at",
                "send_at is more than 366 days ahead: schedule it later, closer to the time",
                field: "send_at"
            )
        }
        return date
    }

    // MARK: Helpers

    /// What to say about Unix seconds so large they are milliseconds sent by mistake.
    static func millisecondsHint(_ field: String, _ value: Int64) -> String {
        "\(field) \(value) looks like milliseconds: send Unix seconds (\(value / 1_000)) or an RFC 3339 time "
            + "such as 2030-01-01T09:00:00Z"
    }

    private static func optionalName(
        _ object: inout Reader,
        _ key: String,
        what: String
    ) throws(NotificationError) -> String? {
        guard let text = try object.string(key) else { return nil }
        guard !text.isEmpty, text.utf8.count <= NotificationLimits.maximumNameBytes else {
            throw .invalid(
                "invalid_\(key)",
                "\(key) must be 1 to \(NotificationLimits.maximumNameBytes) bytes: \(what)",
                field: key
            )
        }
        return text
    }
}
