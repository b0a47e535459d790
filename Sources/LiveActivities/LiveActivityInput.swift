public import APNs
import Foundation
public import HeraldCore

/// Strict parsing of the Live Activities bodies: no duplicate keys, no unknown fields, bounded
/// depth, sizes and lengths, each refusal naming its field. The create body is in
/// `LiveActivityInput+Create.swift`.
public enum LiveActivityInput {
    /// A push-to-start token registration: `{"app"?, "environment"?, "attributes_type", "token"}`.
    public struct PushToStart: Sendable, Hashable {
        public var app: String?
        public var environment: APNSEnvironment?
        public var attributesType: String
        public var token: String
    }

    /// An instance report: `{"activity_id", "device_token"?, "update_token"?, "state"?}`.
    public struct Instance: Sendable, Hashable {
        public var activityID: String
        public var deviceToken: String?
        public var updateToken: String?
        public var state: LiveActivityInstance.State
    }

    public static func parsePushToStart(_ body: [UInt8]) throws(LiveActivityError) -> PushToStart {
        let object = try jsonObject(
            body,
            limit: LiveActivityLimits.maximumBodyBytes,
            example: #"{"attributes_type": "LoanAttributes", "token": "<hex>"}"#
        )
        try known(object, ["app", "environment", "attributes_type", "token"], what: "a push-to-start token")
        let (app, environment) = try scope(object)
        return PushToStart(
            app: app,
            environment: environment,
            attributesType: try name(object, "attributes_type", required: true) ?? "",
            token: try token(object, "token", required: true) ?? ""
        )
    }

    public static func parseInstance(_ body: [UInt8]) throws(LiveActivityError) -> Instance {
        try parseInstance(body, withUser: false).instance
    }

    /// An instance report a backend sends with the API key: the client body plus `user_id`, the
    /// user whose device runs the instance (required).
    public static func parseBackendInstance(
        _ body: [UInt8]
    ) throws(LiveActivityError) -> (instance: Instance, userID: String) {
        let (instance, user) = try parseInstance(body, withUser: true)
        return (instance, user ?? "")
    }

    private static func parseInstance(
        _ body: [UInt8],
        withUser: Bool
    ) throws(LiveActivityError) -> (instance: Instance, userID: String?) {
        let object = try jsonObject(
            body,
            limit: LiveActivityLimits.maximumBodyBytes,
            example: withUser
                ? #"{"user_id": "user-1", "activity_id": "<iOS activity.id>", "device_token": "<hex>"}"#
                : #"{"activity_id": "<iOS activity.id>", "device_token": "<hex>"}"#
        )
        try known(
            object,
            Set(["activity_id", "device_token", "update_token", "state"]).union(withUser ? ["user_id"] : []),
            what: "an instance"
        )
        let user = withUser ? try name(object, "user_id", required: true) : nil
        var state = LiveActivityInstance.State.active
        if let text = try string(object, "state", limit: 16) {
            guard let parsed = LiveActivityInstance.State(rawValue: text) else {
                throw .invalid("invalid_state", "state must be active, ended or dismissed", field: "state")
            }
            state = parsed
        }
        let instance = Instance(
            activityID: try name(object, "activity_id", required: true) ?? "",
            deviceToken: try token(object, "device_token", required: false),
            updateToken: try token(object, "update_token", required: false),
            state: state
        )
        return (instance, user)
    }

    /// An update (`{"content_state", "alert"?, "stale_date"?, "relevance_score"?, "priority"?,
    /// "expiration"?}`) or an end (`{"content_state"?, "dismissal_date"?, "alert"?, …}`; the content
    /// defaults to the latest). The timestamp is set when it is accepted.
    public static func parseUpdate(
        _ body: [UInt8],
        event: LiveActivityUpdate.Event
    ) throws(LiveActivityError) -> (update: LiveActivityUpdate, hasContent: Bool) {
        let object = try jsonObject(
            body,
            limit: LiveActivityLimits.maximumBodyBytes,
            example: #"{"content_state": {"step": 2}}"#
        )
        let fields =
            event == .update
            ? ["content_state", "alert", "stale_date", "relevance_score", "priority", "expiration"]
            : ["content_state", "dismissal_date", "alert", "stale_date", "relevance_score", "priority", "expiration"]
        try known(object, Set(fields), what: event == .update ? "an update" : "an end")
        let content = try jsonObjectValue(object, "content_state", required: event == .update)
        if let content, try encodedSize(content) > LiveActivityLimits.maximumActivityDataBytes {
            throw .tooLarge(
                "content_state_too_large",
                "content_state is over 4096 bytes: iOS allows 4 KB of attributes and content state together",
                field: "content_state"
            )
        }
        var priority = 10
        if let value = object["priority"], value != .null {
            guard let number = integer(value), number == 5 || number == 10 else {
                throw .invalid(
                    "invalid_priority",
                    "priority must be 10 (now) or 5 (when power allows)",
                    field: "priority"
                )
            }
            priority = number
        }
        let update = LiveActivityUpdate(
            event: event,
            contentState: content ?? .object([:]),
            alert: try alert(object, required: false),
            staleDate: try time(object, "stale_date"),
            dismissalDate: try time(object, "dismissal_date"),
            relevanceScore: try score(object),
            priority: priority,
            expiration: try expiration(object)
        )
        return (update, content != nil)
    }

    /// `expiration`: Unix seconds (0: deliver now or never), for a broadcast channel Herald
    /// created with `storage_policy` 1.
    private static func expiration(_ object: [String: JSONValue]) throws(LiveActivityError) -> Int64? {
        guard let value = object["expiration"], value != .null else { return nil }
        guard let number = integer(value), number >= 0, number <= Int(UInt32.max) else {
            throw .invalid(
                "invalid_expiration",
                "expiration must be Unix seconds (0: deliver now or never), for a channel created with storage_policy 1",
                field: "expiration"
            )
        }
        return Int64(number)
    }

    // MARK: Shared

    /// The reader of Live Activities bodies.
    typealias Reader = JSONObjectReader<LiveActivityDomain>

    /// Parses `body` with the one strict grammar into a JSON object (an empty body is `{}`).
    static func jsonObject(
        _ body: [UInt8],
        limit: Int,
        example: String
    ) throws(LiveActivityError) -> [String: JSONValue] {
        guard body.count <= limit else {
            throw .tooLarge("body_too_large", "the body is \(body.count) bytes: send at most \(limit)", field: nil)
        }
        return try Reader(
            body: body,
            maximumDepth: LiveActivityLimits.maximumDepth,
            what: "a Live Activities body",
            example: example,
            emptyIsObject: true
        ).members
    }

    static func known(_ object: [String: JSONValue], _ fields: Set<String>, what: String) throws(LiveActivityError) {
        try Reader(members: object, what: what).rejectUnknown(fields)
    }

    static func scope(_ object: [String: JSONValue]) throws(LiveActivityError) -> (String?, APNSEnvironment?) {
        let app = try name(object, "app", required: false)
        var environment: APNSEnvironment?
        if let text = try string(object, "environment", limit: 16) {
            guard text == "production" || text == "sandbox" else {
                throw .invalid(
                    "invalid_environment",
                    "environment must be \"production\" or \"sandbox\"",
                    field: "environment"
                )
            }
            environment = APNSEnvironment(rawValue: text)
        }
        return (app, environment)
    }

    static func string(_ object: [String: JSONValue], _ key: String, limit: Int) throws(LiveActivityError) -> String? {
        guard let value = object[key], value != .null else { return nil }
        return try Reader.string(
            value,
            field: key,
            maximumBytes: limit,
            code: "invalid_\(key)",
            tooLongCode: "\(key)_too_long"
        )
    }

    /// A non-empty name of at most ``LiveActivityLimits/maximumNameBytes``.
    static func name(_ object: [String: JSONValue], _ key: String, required: Bool) throws(LiveActivityError) -> String?
    {
        guard let text = try string(object, key, limit: LiveActivityLimits.maximumNameBytes) else {
            if required { throw .invalid("missing_field", "\(key) is missing", field: key) }
            return nil
        }
        guard !text.isEmpty else { throw .invalid("invalid_\(key)", "\(key) must not be empty", field: key) }
        return text
    }

    /// A hexadecimal token, lowercase.
    static func token(_ object: [String: JSONValue], _ key: String, required: Bool) throws(LiveActivityError) -> String?
    {
        guard let text = try string(object, key, limit: 400) else {
            if required { throw .invalid("missing_field", "\(key) is missing: send the hexadecimal token", field: key) }
            return nil
        }
        do {
            return try APNSDeviceToken.normalized(text)
        } catch {
            throw .invalid("invalid_\(key)", error.message, field: key)
        }
    }

    /// A JSON object value, as APNs will carry it: the member `key` of `object`.
    static func jsonObjectValue(
        _ object: [String: JSONValue],
        _ key: String,
        required: Bool
    ) throws(LiveActivityError) -> APNSJSONValue? {
        guard let value = object[key], value != .null else {
            if required { throw .invalid("missing_field", "\(key) is missing: send a JSON object", field: key) }
            return nil
        }
        guard case .object = value else {
            throw .invalid("invalid_\(key)", "\(key) must be a JSON object", field: key)
        }
        return value
    }

    static func encodedSize(_ value: APNSJSONValue) throws(LiveActivityError) -> Int {
        do {
            return try value.encodedPayload().count
        } catch {
            throw .invalid("invalid_json", "a value cannot be encoded as JSON", field: nil)
        }
    }

    /// An alert under `key` of `object`; `path` names it in errors (`board.arrival_alert`).
    static func alert(
        _ object: [String: JSONValue],
        key: String = "alert",
        path: String = "alert",
        required: Bool
    ) throws(LiveActivityError) -> LiveActivityAlert? {
        guard let value = object[key], value != .null else {
            if required {
                throw .invalid(
                    "missing_field",
                    "\(path) is missing: give {\"title\": …, \"body\": …}",
                    field: path
                )
            }
            return nil
        }
        guard case .object(let fields) = value else {
            throw .invalid("invalid_alert", "\(path) must be {\"title\": …, \"body\": …}", field: path)
        }
        try Reader(members: fields, path: path, what: "an alert").rejectUnknown(
            ["title", "body"],
            hint: "\(path) takes title and body"
        )
        var parts: [String] = []
        for part in ["title", "body"] {
            guard case .string(let text)? = fields[part], !text.isEmpty else {
                throw .invalid("invalid_alert", "\(path).\(part) must be a non-empty string", field: "\(path).\(part)")
            }
            guard text.count <= LiveActivityLimits.maximumAlertCharacters else {
                throw .tooLarge(
                    "alert_too_long",
                    "\(path).\(part) has \(text.count) characters: send at most "
                        + "\(LiveActivityLimits.maximumAlertCharacters)",
                    field: "\(path).\(part)"
                )
            }
            parts.append(text)
        }
        return LiveActivityAlert(title: parts[0], body: parts[1])
    }

    /// A time as RFC 3339 or Unix seconds, as Unix seconds.
    static func time(_ object: [String: JSONValue], _ key: String) throws(LiveActivityError) -> Int64? {
        guard let value = object[key], value != .null else { return nil }
        if let seconds = Reader.wholeNumber(value) {
            guard (0...EpochTime.maximumSeconds).contains(seconds), seconds < 100_000_000_000 else {
                throw .invalid(
                    "invalid_\(key)",
                    "\(key) must be Unix seconds (not milliseconds) or an RFC 3339 time",
                    field: key
                )
            }
            return seconds
        }
        if case .string(let text) = value, text.utf8.count <= 64, let date = RFC3339.date(from: text) {
            return EpochTime.seconds(date)
        }
        throw .invalid(
            "invalid_\(key)",
            "\(key) must be an RFC 3339 time such as 2030-01-01T09:00:00Z or Unix seconds",
            field: key
        )
    }

    static func score(_ object: [String: JSONValue]) throws(LiveActivityError) -> Double? {
        let number: Double
        switch object["relevance_score"] {
        case nil, .null?: return nil
        case .integer(let value)?: number = Double(value)
        case .double(let value)?: number = value
        default: number = .nan
        }
        guard (0...1_000_000).contains(number) else {
            throw .invalid(
                "invalid_relevance_score",
                "relevance_score must be a number from 0 to 1000000 (the highest is shown first)",
                field: "relevance_score"
            )
        }
        return number
    }

    /// A JSON boolean.
    static func boolean(_ value: JSONValue) -> Bool? {
        guard case .bool(let flag) = value else { return nil }
        return flag
    }

    /// A whole JSON number that fits in `Int`.
    static func integer(_ value: JSONValue) -> Int? {
        Reader.wholeNumber(value).flatMap { Int(exactly: $0) }
    }
}
