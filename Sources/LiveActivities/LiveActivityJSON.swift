import APNs
import Foundation
import HeraldCore
import Jobs

/// The stored JSON of what every update writes and reads (the job payload, the activity's latest
/// update and content state), built from and read into ``APNSJSONValue`` directly: Foundation's
/// `Codable` coders cost more than the rest of accepting an update (docs/PERFORMANCE.md). The
/// keys are the ones their `Codable` conformances use, so rows written either way read the same.
extension LiveActivityStore {
    /// `value` as compact JSON text with sorted keys.
    static func text(_ value: APNSJSONValue) throws -> String {
        String(decoding: try value.jsonBytes(), as: UTF8.self)
    }

    /// The value of stored JSON text.
    static func value(_ text: String) throws -> APNSJSONValue {
        try APNSJSONValue(parsing: Array(text.utf8))
    }
}

/// Stored JSON that does not have the shape its reader expects.
struct LiveActivityStoredJSONError: Error, CustomStringConvertible {
    var what: String

    var description: String { "stored JSON: \(what)" }
}

extension APNSJSONValue {
    fileprivate func member(_ key: String) throws -> APNSJSONValue {
        guard let value = self[key] else { throw LiveActivityStoredJSONError(what: "no \(key)") }
        return value
    }

    fileprivate func string(_ key: String) throws -> String {
        guard case .string(let value) = try member(key) else {
            throw LiveActivityStoredJSONError(what: "\(key) is not a string")
        }
        return value
    }

    fileprivate func integer(_ key: String) throws -> Int64 {
        guard case .integer(let value) = try member(key) else {
            throw LiveActivityStoredJSONError(what: "\(key) is not an integer")
        }
        return value
    }

    fileprivate func optionalInteger(_ key: String) throws -> Int64? {
        guard let value = self[key], value != .null else { return nil }
        return try integer(key)
    }
}

extension LiveActivityUpdate {
    /// `{"event", "contentState", "alert"?: {"title", "body"}, "staleDate"?, "dismissalDate"?,
    /// "relevanceScore"?, "priority", "timestamp", "expiration"?}`.
    var json: APNSJSONValue {
        var members: [String: APNSJSONValue] = [
            "event": .string(event.rawValue), "contentState": contentState, "priority": .integer(Int64(priority)),
            "timestamp": .integer(timestamp),
        ]
        if let alert { members["alert"] = .object(["title": .string(alert.title), "body": .string(alert.body)]) }
        if let staleDate { members["staleDate"] = .integer(staleDate) }
        if let dismissalDate { members["dismissalDate"] = .integer(dismissalDate) }
        if let relevanceScore { members["relevanceScore"] = .double(relevanceScore) }
        if let expiration { members["expiration"] = .integer(expiration) }
        return .object(members)
    }

    init(json: APNSJSONValue) throws {
        guard let event = Event(rawValue: try json.string("event")) else {
            throw LiveActivityStoredJSONError(what: "an update's event is neither update nor end")
        }
        var alert: LiveActivityAlert?
        if let stored = json["alert"], stored != .null {
            alert = LiveActivityAlert(title: try stored.string("title"), body: try stored.string("body"))
        }
        self.init(
            event: event,
            contentState: try json.member("contentState"),
            alert: alert,
            staleDate: try json.optionalInteger("staleDate"),
            dismissalDate: try json.optionalInteger("dismissalDate"),
            relevanceScore: try json.optionalDouble("relevanceScore"),
            priority: Int(try json.integer("priority")),
            timestamp: try json.integer("timestamp"),
            expiration: try json.optionalInteger("expiration")
        )
    }
}

extension LiveActivitySend {
    /// `{"id", "update", "instance"?}`.
    var json: APNSJSONValue {
        var members: [String: APNSJSONValue] = ["id": .string(LiveActivityID.text(id)), "update": update.json]
        if let instance { members["instance"] = .string(instance) }
        return .object(members)
    }

    init(json: APNSJSONValue) throws {
        guard let id = RequestIdentifier.uuid(try json.string("id")) else {
            throw LiveActivityStoredJSONError(what: "a send's id is not a UUID")
        }
        self.init(
            id: id,
            update: try LiveActivityUpdate(json: try json.member("update")),
            instance: try json.optionalString("instance")
        )
    }
}

extension LiveActivitySendJob {
    /// `{"sends": [...]}`.
    var json: APNSJSONValue {
        .object(["sends": .array(sends.map(\.json))])
    }

    /// Reads `{"sends": [...]}`, or a payload of Herald before batches, `{"id", "update",
    /// "instance"?}`, as one send.
    init(json: APNSJSONValue) throws {
        guard let stored = json["sends"] else {
            self.init(sends: [try LiveActivitySend(json: json)])
            return
        }
        guard case .array(let items) = stored else { throw LiveActivityStoredJSONError(what: "sends is not an array") }
        self.init(sends: try items.map(LiveActivitySend.init(json:)))
    }
}

extension LiveActivityJob {
    /// `{"id", "tokens"?, "round"?, "channel"?}`.
    var json: APNSJSONValue {
        var members: [String: APNSJSONValue] = ["id": .string(LiveActivityID.text(id))]
        if let tokens { members["tokens"] = .array(tokens.map { .string($0) }) }
        if let round { members["round"] = .integer(Int64(round)) }
        if let channel { members["channel"] = .string(channel) }
        return .object(members)
    }

    /// Reads a job's payload, as this writes it or as Herald wrote it with `JSONEncoder` (an
    /// upper-case id).
    init(_ job: Job) throws {
        try self.init(payload: job.payload)
    }

    /// Reads a job's payload text.
    init(payload: String) throws {
        let json = try LiveActivityStore.value(payload)
        guard let id = RequestIdentifier.uuid(try json.string("id")) else {
            throw LiveActivityStoredJSONError(what: "a job's id is not a UUID")
        }
        let tokens = json["tokens"] == nil || json["tokens"] == .null ? nil : try json.strings("tokens")
        self.init(
            id: id,
            tokens: tokens,
            round: try json.optionalInteger("round").map { Int($0) },
            channel: try json.optionalString("channel")
        )
    }
}

extension APNSJSONValue {
    fileprivate func optionalString(_ key: String) throws -> String? {
        guard let value = self[key], value != .null else { return nil }
        return try string(key)
    }

    /// A stored double: `JSONEncoder` writes an integral one without a fraction.
    fileprivate func optionalDouble(_ key: String) throws -> Double? {
        switch self[key] {
        case nil, .null: return nil
        case .integer(let number): return Double(number)
        case .double(let number): return number
        default: throw LiveActivityStoredJSONError(what: "\(key) is not a number")
        }
    }

    fileprivate func bool(_ key: String) throws -> Bool {
        guard case .bool(let value) = try member(key) else {
            throw LiveActivityStoredJSONError(what: "\(key) is not true or false")
        }
        return value
    }

    fileprivate func strings(_ key: String) throws -> [String] {
        guard case .array(let items) = try member(key) else {
            throw LiveActivityStoredJSONError(what: "\(key) is not an array")
        }
        return try items.map { item in
            guard case .string(let text) = item else {
                throw LiveActivityStoredJSONError(what: "\(key) holds something else than strings")
            }
            return text
        }
    }

    /// The one member of a stored enum case (`{"users": {"_0": [...]}}`, `{"all": {}}`).
    fileprivate func enumCase(_ what: String) throws -> (name: String, value: APNSJSONValue) {
        guard case .object(let members) = self, members.count == 1, let (name, value) = members.first else {
            throw LiveActivityStoredJSONError(what: "\(what) is not an object of one member")
        }
        return (name, value)
    }
}

extension LiveActivityAlert {
    fileprivate init(json: APNSJSONValue) throws {
        self.init(title: try json.string("title"), body: try json.string("body"))
    }
}

extension LiveActivityRequest {
    /// Reads a stored request, as its `Codable` conformance writes it (the activity's `request`
    /// column): a page of activities spent a third of its time in `Decodable` reading these.
    /// Optional members may be absent or `null`; enums are `{"<case>": {"_0": …}}`.
    init(json: APNSJSONValue) throws {
        var id: UUID?
        if let text = try json.optionalString("id") {
            guard let parsed = UUID(uuidString: text) else {
                throw LiveActivityStoredJSONError(what: "id is not a UUID")
            }
            id = parsed
        }
        self.init(
            id: id,
            app: try json.optionalString("app"),
            attributesType: try json.string("attributesType"),
            attributes: try json.member("attributes"),
            idAttribute: try json.string("idAttribute"),
            contentState: try json.member("contentState"),
            alert: try LiveActivityAlert(json: try json.member("alert")),
            audience: try LiveActivityAudience(json: try json.member("audience")),
            channel: try json["channel"].flatMap { $0 == .null ? nil : try LiveActivityChannelRequest(json: $0) },
            requestUpdateToken: try json.bool("requestUpdateToken"),
            staleDate: try json.optionalInteger("staleDate"),
            relevanceScore: try json.optionalDouble("relevanceScore"),
            startAt: try json.optionalInteger("startAt"),
            endAt: try json.optionalInteger("endAt")
        )
        environmentName = try json.optionalString("environmentName")
        if let text = try json.optionalString("start") {
            guard let parsed = LiveActivityStart(rawValue: text) else {
                throw LiveActivityStoredJSONError(what: "start is neither push nor app")
            }
            start = parsed
        }
        if let stored = json["members"], stored != .null {
            guard case .array(let items) = stored else { throw LiveActivityStoredJSONError(what: "members") }
            members = try items.map { LiveActivityMember(userID: try $0.string("userID"), name: try $0.string("name")) }
        }
        if let stored = json["board"], stored != .null { board = try LiveActivityBoardOptions(json: stored) }
    }
}

extension LiveActivityAudience {
    fileprivate init(json: APNSJSONValue) throws {
        let (name, value) = try json.enumCase("audience")
        switch name {
        case "tokens": self = .tokens(try value.strings("_0"))
        case "users": self = .users(try value.strings("_0"))
        case "anyTag": self = .anyTag(try value.strings("_0"))
        case "allTags": self = .allTags(try value.strings("_0"))
        case "all": self = .all
        default: throw LiveActivityStoredJSONError(what: "audience \(name) is not one Herald writes")
        }
    }
}

extension LiveActivityChannelRequest {
    fileprivate init(json: APNSJSONValue) throws {
        let (name, value) = try json.enumCase("channel")
        switch name {
        case "create": self = .create(storagePolicy: Int(try value.integer("storagePolicy")))
        case "existing": self = .existing(try value.string("_0"))
        default: throw LiveActivityStoredJSONError(what: "channel \(name) is not one Herald writes")
        }
    }
}

extension LiveActivityBoardOptions {
    fileprivate init(json: APNSJSONValue) throws {
        var nudge: Nudge?
        if let stored = json["nudge"], stored != .null {
            nudge = Nudge(
                after: try stored.integer("after"),
                alert: try LiveActivityAlert(json: try stored.member("alert"))
            )
        }
        self.init(
            arrivalAlert: try json["arrivalAlert"].flatMap { $0 == .null ? nil : try LiveActivityAlert(json: $0) },
            endWhenAllArrived: try json.optionalInteger("endWhenAllArrived"),
            nudge: nudge
        )
    }
}
