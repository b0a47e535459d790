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
        var relevanceScore: Double?
        switch json["relevanceScore"] {
        case .integer(let value): relevanceScore = Double(value)
        case .double(let value): relevanceScore = value
        case nil, .null: relevanceScore = nil
        default: throw LiveActivityStoredJSONError(what: "relevanceScore is not a number")
        }
        self.init(
            event: event,
            contentState: try json.member("contentState"),
            alert: alert,
            staleDate: try json.optionalInteger("staleDate"),
            dismissalDate: try json.optionalInteger("dismissalDate"),
            relevanceScore: relevanceScore,
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
        var instance: String?
        if let stored = json["instance"], stored != .null { instance = try json.string("instance") }
        self.init(id: id, update: try LiveActivityUpdate(json: try json.member("update")), instance: instance)
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
        var tokens: [String]?
        switch json["tokens"] {
        case nil, .null: tokens = nil
        case .array(let items):
            tokens = try items.map { item in
                guard case .string(let token) = item else {
                    throw LiveActivityStoredJSONError(what: "a job's tokens are not strings")
                }
                return token
            }
        default: throw LiveActivityStoredJSONError(what: "a job's tokens are not an array")
        }
        var channel: String?
        if let stored = json["channel"], stored != .null { channel = try json.string("channel") }
        self.init(id: id, tokens: tokens, round: try json.optionalInteger("round").map { Int($0) }, channel: channel)
    }
}
