public import APNs
public import Foundation
public import HeraldCore

/// The limits of a poll's bodies.
public enum PollLimits {
    /// A create body: 500 members with long names fit.
    public static let maximumCreateBodyBytes = 262_144
    /// A vote body.
    public static let maximumBodyBytes = 4_096
    public static let options = 2...10
    public static let members = 2...500
    public static let maximumQuestionBytes = 500
    public static let maximumOptionBytes = 64
    public static let maximumUserIDBytes = 255
    public static let maximumNameBytes = 100
}

/// A parsed `POST /v1/polls` body.
public struct PollRequest: Sendable, Hashable {
    public var app: String?
    public var environment: APNSEnvironment?
    public var question: String
    public var options: [String]
    public var members: [PollMember]
    public var hostUserID: String?
    /// Unix seconds.
    public var closesAt: Int64?
    public var liveActivity: PollLiveActivity?
}

/// Strict parsing of the Polls bodies with the one JSON reader: no duplicate keys, no unknown
/// fields, every limit a refusal naming its field.
public enum PollInput {
    typealias Reader = JSONObjectReader<PollDomain>

    /// `{"app"?, "environment"?, "question", "options", "members", "host_user_id"?, "closes_at"?,
    /// "live_activity"?}`; `closes_at` must be after `now`.
    public static func parseCreate(_ body: [UInt8], now: Date) throws(PollError) -> PollRequest {
        var reader = try Reader(
            body: body,
            maximumDepth: 16,
            what: "a poll",
            example: #"{"question": "Dinner at 8?", "options": ["accept", "decline"], "members": [...]}"#
        )
        let app = try reader.string("app", maximumBytes: 255, allowEmpty: false)
        var environment: APNSEnvironment?
        if let text = try reader.string("environment", maximumBytes: 16) {
            guard text == "production" || text == "sandbox" else {
                throw .invalid("invalid_environment", "environment must be production or sandbox", field: "environment")
            }
            environment = APNSEnvironment(rawValue: text)
        }
        let question = try reader.requiredString("question", maximumBytes: PollLimits.maximumQuestionBytes)
        let options = try self.options(&reader)
        let members = try self.members(&reader)
        let host = try reader.string("host_user_id", maximumBytes: PollLimits.maximumUserIDBytes, allowEmpty: false)
        if let host, !members.contains(where: { $0.userID == host }) {
            throw .invalid(
                "invalid_host_user_id",
                "host_user_id must be the user_id of a member",
                field: "host_user_id"
            )
        }
        let closesAt = try reader.integer(
            "closes_at",
            in: 0...100_000_000_000,
            message: "closes_at must be Unix seconds"
        )
        if let closesAt, closesAt <= EpochTime.seconds(now) {
            throw .invalid("invalid_closes_at", "closes_at must be in the future (Unix seconds)", field: "closes_at")
        }
        let liveActivity = try self.liveActivity(&reader)
        try reader.finish()
        return PollRequest(
            app: app,
            environment: environment,
            question: question,
            options: options,
            members: members,
            hostUserID: host,
            closesAt: closesAt,
            liveActivity: liveActivity
        )
    }

    /// `{"option"}`: one of the poll's options (checked against the poll by the service).
    public static func parseVote(_ body: [UInt8]) throws(PollError) -> String {
        var reader = try Reader(
            body: body,
            maximumDepth: 4,
            what: "a vote",
            example: #"{"option": "accept"}"#
        )
        let option = try reader.requiredString("option", maximumBytes: PollLimits.maximumOptionBytes)
        try reader.finish()
        return option
    }

    /// A finalize's body: none, or `{}`.
    public static func parseFinalize(_ body: [UInt8]) throws(PollError) {
        let reader = try Reader(body: body, maximumDepth: 2, what: "a finalize", example: "{}", emptyIsObject: true)
        try reader.finish(hint: "a finalize takes no fields: send no body")
    }

    private static func options(_ reader: inout Reader) throws(PollError) -> [String] {
        guard
            let options = try reader.strings(
                "options",
                maximumCount: PollLimits.options.upperBound,
                maximumBytes: PollLimits.maximumOptionBytes
            )
        else { throw .invalid("missing_field", "options is missing: send 2 to 10 distinct strings", field: "options") }
        guard options.count >= PollLimits.options.lowerBound else {
            throw .invalid("too_few_options", "options has \(options.count) entries: send 2 to 10", field: "options")
        }
        guard Set(options).count == options.count else {
            throw .invalid("duplicate_option", "options must be distinct", field: "options")
        }
        return options
    }

    private static func members(_ reader: inout Reader) throws(PollError) -> [PollMember] {
        guard let items = try reader.array("members", maximumCount: PollLimits.members.upperBound) else {
            throw .invalid(
                "missing_field",
                #"members is missing: send 2 to 500 {"user_id", "name"}"#,
                field: "members"
            )
        }
        guard items.count >= PollLimits.members.lowerBound else {
            throw .invalid("too_few_members", "members has \(items.count) entries: send 2 to 500", field: "members")
        }
        var members: [PollMember] = []
        var seen = Set<String>()
        for (index, item) in items.enumerated() {
            var member = try Reader.object(
                item,
                field: "members[\(index)]",
                what: "a member",
                shape: #"{"user_id": …, "name": …}"#,
                code: "invalid_members"
            )
            let user = try member.requiredString("user_id", maximumBytes: PollLimits.maximumUserIDBytes)
            let name = try member.requiredString("name", maximumBytes: PollLimits.maximumNameBytes)
            try member.finish()
            guard seen.insert(user).inserted else {
                throw .invalid(
                    "duplicate_member",
                    "members[\(index)].user_id repeats an earlier member",
                    field: "members[\(index)].user_id"
                )
            }
            members.append(PollMember(userID: user, name: name))
        }
        return members
    }

    private static func liveActivity(_ reader: inout Reader) throws(PollError) -> PollLiveActivity? {
        guard
            var activity = try reader.object(
                "live_activity",
                shape: #"{"attributes_type", "attributes", "content_state", "alert"}"#
            )
        else { return nil }
        let type = try activity.requiredString("attributes_type", maximumBytes: 255)
        func object(_ key: String, required: Bool) throws(PollError) -> JSONValue? {
            guard let value = activity.value(key) else {
                if required {
                    throw .invalid("missing_field", "live_activity.\(key) is missing", field: "live_activity.\(key)")
                }
                return nil
            }
            guard case .object = value else {
                throw .invalid(
                    "invalid_live_activity",
                    "live_activity.\(key) must be a JSON object",
                    field: "live_activity.\(key)"
                )
            }
            return value
        }
        let attributes = try object("attributes", required: false) ?? .object([:])
        let contentState = try object("content_state", required: true) ?? .object([:])
        let alert = try object("alert", required: true) ?? .object([:])
        try activity.finish()
        return PollLiveActivity(attributesType: type, attributes: attributes, contentState: contentState, alert: alert)
    }
}
