import APNs
import Foundation
import HTTPRouting
import HeraldCore
import Notifications

/// The strict reading of `/v1/channels` bodies and path ids: unknown fields, wrong types and
/// values out of range are 400 naming the field.
enum ChannelInput {
    struct Create: Sendable {
        var app: String?
        var environment: APNSEnvironment?
        var storagePolicy: APNSChannelMessageStoragePolicy
    }

    struct Broadcast: Sendable {
        var app: String?
        var environment: APNSEnvironment?
        var event: APNSLiveActivityEvent
        var contentState: APNSJSONValue
        var alert: APNSLiveActivityAlert?
        var staleDate: Date?
        var dismissalDate: Date?
        var relevanceScore: Double?
        var timestamp: Date?
        var priority: APNSPriority
        var expiration: APNSExpiration
    }

    /// Nesting allowed in a body (`content_state` included).
    static let maximumDepth = 32
    /// The longest app name, alert title or body, and sound name, in bytes.
    static let maximumNameBytes = 255
    static let maximumTextBytes = 1024

    // MARK: Bodies

    static func create(_ body: [UInt8]) throws(ChannelError) -> Create {
        let object = try jsonObject(body, example: #"{"app": "com.example.app", "storage_policy": 0}"#)
        try rejectUnknown(object, known: ["app", "environment", "storage_policy"], of: "a channel")
        guard case .integer(let number)? = object["storage_policy"],
            let policy = APNSChannelMessageStoragePolicy(rawValue: Int(clamping: number))
        else {
            throw invalid(
                "storage_policy",
                "storage_policy is required: 0 (APNs stores nothing: frequent updates) or 1 (APNs keeps the latest)"
            )
        }
        return Create(
            app: try app(object["app"]),
            environment: try environment(
                object["environment"]?.stringValue,
                field: "environment",
                value: object["environment"]
            ),
            storagePolicy: policy
        )
    }

    static func broadcast(_ body: [UInt8]) throws(ChannelError) -> Broadcast {
        let object = try jsonObject(
            body,
            example: #"{"event": "update", "content_state": {"step": 2}}"#
        )
        try rejectUnknown(
            object,
            known: [
                "app", "environment", "event", "content_state", "alert", "stale_date", "dismissal_date",
                "relevance_score", "timestamp", "priority", "expiration",
            ],
            of: "a broadcast"
        )
        guard let name = object["event"]?.stringValue, name == "update" || name == "end" else {
            throw invalid("event", "event must be update or end (a broadcast cannot start an activity)")
        }
        guard let contentState = object["content_state"], contentState.objectValue != nil else {
            throw invalid("content_state", "content_state is required: a JSON object matching the app's ContentState")
        }
        var priority = APNSPriority.immediately
        switch object["priority"] {
        case nil, .null?: break
        case .integer(let number)? where [10, 5, 1].contains(number):
            priority = APNSPriority(rawValue: Int(number)) ?? .immediately
        default:
            throw invalid("priority", "priority must be 10 (default), 5 or 1")
        }
        var expiration = APNSExpiration.immediately
        if let value = object["expiration"], value != .null {
            if case .integer(0) = value {
                expiration = .immediately
            } else {
                expiration = .at(try time(value, field: "expiration"))
            }
        }
        var relevanceScore: Double?
        switch object["relevance_score"] {
        case nil, .null?: break
        case .integer(let number)?: relevanceScore = Double(number)
        case .double(let number)? where number.isFinite: relevanceScore = number
        default: throw invalid("relevance_score", "relevance_score must be a number")
        }
        return Broadcast(
            app: try app(object["app"]),
            environment: try environment(
                object["environment"]?.stringValue,
                field: "environment",
                value: object["environment"]
            ),
            event: APNSLiveActivityEvent(rawValue: name),
            contentState: contentState,
            alert: try alert(object["alert"]),
            staleDate: try optionalTime(object["stale_date"], field: "stale_date"),
            dismissalDate: try optionalTime(object["dismissal_date"], field: "dismissal_date"),
            relevanceScore: relevanceScore,
            timestamp: try optionalTime(object["timestamp"], field: "timestamp"),
            priority: priority,
            expiration: expiration
        )
    }

    // MARK: Path and query

    /// The `{id}` of the path: APNs' base64 channel id, percent-decoded, or written in base64url.
    static func channelID(_ request: HTTPRequest) throws(ChannelError) -> APNSChannelID {
        var text = request.parameters["id"] ?? ""
        if text.contains("-") || text.contains("_") {
            text = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        }
        if !text.isEmpty, !text.contains("=") {
            text += String(repeating: "=", count: (4 - text.utf8.count % 4) % 4)
        }
        let id = APNSChannelID(rawValue: text)
        do {
            try id.validate()
        } catch {
            throw .notAChannelID
        }
        return id
    }

    /// The `app` query parameter: a bundle ID, `nil` when absent (the first configured app).
    static func app(_ request: HTTPRequest) throws(ChannelError) -> String? {
        let app = request.queryValue("app")
        if let app, app.isEmpty || app.utf8.count > NotificationLimits.maximumNameBytes {
            throw invalid(
                "app",
                "app must be the bundle ID of a configured app, 1 to \(NotificationLimits.maximumNameBytes) bytes"
            )
        }
        return app
    }

    /// `production` or `sandbox`; `nil` when absent (the app's default).
    static func environment(
        _ text: String?,
        field: String,
        value: APNSJSONValue? = nil
    ) throws(ChannelError) -> APNSEnvironment? {
        if let value, value != .null, value.stringValue == nil {
            throw invalid(field, "\(field) must be production or sandbox")
        }
        guard let text else { return nil }
        guard text == "production" || text == "sandbox", let environment = APNSEnvironment(rawValue: text) else {
            throw invalid(field, "\(field) must be production or sandbox")
        }
        return environment
    }

    // MARK: Values

    private static func jsonObject(_ body: [UInt8], example: String) throws(ChannelError) -> [String: APNSJSONValue] {
        guard body.count <= ChannelRoutes.maximumBodyBytes else {
            throw .tooLarge(
                "body_too_large",
                "the body is \(body.count) bytes: send at most \(ChannelRoutes.maximumBodyBytes)",
                field: nil
            )
        }
        return try JSONObjectReader<ChannelsDomain>(
            body: body,
            maximumDepth: maximumDepth,
            what: "a channel",
            example: example
        )
        .members
    }

    private static func rejectUnknown(
        _ object: [String: APNSJSONValue],
        known: Set<String>,
        of what: String
    ) throws(ChannelError) {
        try JSONObjectReader<ChannelsDomain>(members: object, what: what).rejectUnknown(known)
    }

    private static func app(_ value: APNSJSONValue?) throws(ChannelError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)? where !text.isEmpty && text.utf8.count <= maximumNameBytes: return text
        default:
            throw invalid("app", "app must be the bundle ID of a configured app, 1 to \(maximumNameBytes) bytes")
        }
    }

    /// `{"title", "body", "sound"?}`, plain strings.
    private static func alert(_ value: APNSJSONValue?) throws(ChannelError) -> APNSLiveActivityAlert? {
        guard let value, value != .null else { return nil }
        let message =
            "alert must be {\"title\": \"…\", \"body\": \"…\", \"sound\"?: \"…\"} with strings of "
            + "at most \(maximumTextBytes) bytes"
        guard let object = value.objectValue, object.keys.allSatisfy(["title", "body", "sound"].contains),
            let title = object["title"]?.stringValue, title.utf8.count <= maximumTextBytes,
            let body = object["body"]?.stringValue, body.utf8.count <= maximumTextBytes
        else { throw invalid("alert", message) }
        var sound: APNSSound?
        switch object["sound"] {
        case nil, .null?: break
        case .string(let name)? where !name.isEmpty && name.utf8.count <= maximumNameBytes: sound = .named(name)
        default: throw invalid("alert.sound", message)
        }
        return APNSLiveActivityAlert(title: .text(title), body: .text(body), sound: sound)
    }

    private static func optionalTime(_ value: APNSJSONValue?, field: String) throws(ChannelError) -> Date? {
        guard let value, value != .null else { return nil }
        return try time(value, field: field)
    }

    /// An RFC 3339 time or Unix seconds.
    private static func time(_ value: APNSJSONValue, field: String) throws(ChannelError) -> Date {
        switch value {
        case .string(let text):
            if let date = RFC3339.date(from: text) { return date }
        case .integer(let seconds) where (0...NotificationLimits.millisecondsThreshold).contains(seconds):
            return Date(timeIntervalSince1970: Double(seconds))
        case .integer(let number) where number > NotificationLimits.millisecondsThreshold:
            throw invalid(
                field,
                "\(field) \(number) looks like milliseconds: send Unix seconds (\(number / 1_000)) or an RFC 3339 time"
            )
        default:
            break
        }
        throw invalid(field, "\(field) must be an RFC 3339 time such as 2030-01-01T00:00:00Z or Unix seconds")
    }

    private static func invalid(_ field: String, _ message: String) -> ChannelError {
        ChannelError.invalid(field, message)
    }
}
