import APNs
import Audiences
public import Foundation
public import HeraldCore

extension LiveActivityInput {
    static let createFields: Set<String> = [
        "id", "app", "environment", "attributes_type", "attributes", "id_attribute", "content_state", "alert",
        "audience", "channel", "request_update_token", "stale_date", "relevance_score", "start_at", "end_at",
        "start", "members", "board",
    ]

    /// Parses a `POST /v1/live-activities` body; `now` bounds `start_at` and `end_at`.
    public static func parseCreate(_ body: [UInt8], now: Date) throws(LiveActivityError) -> LiveActivityRequest {
        let object = try jsonObject(
            body,
            limit: LiveActivityLimits.maximumCreateBodyBytes,
            example: #"{"attributes_type": "…", "attributes": {}, "content_state": {}, "alert": {…}, "audience": {…}}"#
        )
        try known(object, createFields, what: "a Live Activity")
        var id: UUID?
        if let text = try string(object, "id", limit: 64) {
            guard let parsed = RequestIdentifier.uuid(text) else {
                throw .invalid("invalid_id", "id must be a UUID such as 6f1c…-…, or left out", field: "id")
            }
            id = parsed
        }
        let (app, environment) = try scope(object)
        let attributesType = try name(object, "attributes_type", required: true) ?? ""
        let attributes = try jsonObjectValue(object, "attributes", required: false) ?? .object([:])
        let idAttribute = try name(object, "id_attribute", required: false) ?? LiveActivityLimits.defaultIDAttribute
        let contentState = try jsonObjectValue(object, "content_state", required: true) ?? .object([:])
        let start = try start(object["start"])
        let members = try members(object["members"])
        let board = try board(object["board"])
        if board != nil, members == nil {
            throw .invalid(
                "missing_field",
                "members is missing: a board shows its members, give [{\"user_id\": …, \"name\": …}, …]",
                field: "members"
            )
        }
        // The members' users, unless an audience is given.
        let audience: LiveActivityAudience
        if let members, object["audience"] == nil {
            audience = .users(members.map(\.userID))
        } else {
            audience = try self.audience(object["audience"])
        }
        var request = LiveActivityRequest(
            id: id,
            app: app,
            environment: environment,
            attributesType: attributesType,
            attributes: attributes,
            idAttribute: idAttribute,
            contentState: contentState,
            // An activity the app starts shows no push-to-start alert: one is optional there.
            alert: try alert(object, required: start != .app) ?? LiveActivityAlert(title: "", body: ""),
            audience: audience,
            // A board is broadcast: it has a channel, a new one unless one is given.
            channel: try channel(object["channel"]) ?? (board == nil ? nil : .create(storagePolicy: 0)),
            staleDate: try time(object, "stale_date"),
            relevanceScore: try score(object)
        )
        let sent = request.attributesSent(id: id ?? UUID())
        if try encodedSize(sent) + encodedSize(contentState) > LiveActivityLimits.maximumActivityDataBytes {
            throw .tooLarge(
                "activity_data_too_large",
                "attributes and content_state together are over 4096 bytes: iOS allows 4 KB for both",
                field: "attributes"
            )
        }
        if let value = object["request_update_token"], value != .null {
            guard let flag = boolean(value) else {
                throw .invalid(
                    "invalid_request_update_token",
                    "request_update_token must be true or false",
                    field: "request_update_token"
                )
            }
            request.requestUpdateToken = flag
        }
        request.members = members
        request.board = board
        try schedule(object, into: &request, now: now)
        if start == .app {
            request.start = .app
            if case .tokens = request.audience {
                throw .invalid(
                    "invalid_audience",
                    "an activity the app starts is for users: give the audience as users, tags or all "
                        + "(push-to-start tokens are for \"start\": \"push\")",
                    field: "audience"
                )
            }
            if request.startAt != nil {
                throw .invalid(
                    "invalid_start_at",
                    "start_at schedules a push-to-start: leave it out when the app starts the activity "
                        + "(\"start\": \"app\")",
                    field: "start_at"
                )
            }
        }
        return request
    }

    /// `members`: 2 to 500 `{"user_id", "name"}`, each user once.
    private static func members(_ value: JSONValue?) throws(LiveActivityError) -> [LiveActivityMember]? {
        guard let value, value != .null else { return nil }
        let shape = #"[{"user_id": "…", "name": "…"}, …]"#
        guard case .array(let items) = value else {
            throw .invalid("invalid_members", "members must be \(shape)", field: "members")
        }
        let range = LiveActivityLimits.memberCount
        guard range.contains(items.count) else {
            throw .invalid(
                "invalid_members",
                "members has \(items.count): a shared activity has \(range.lowerBound) to \(range.upperBound)",
                field: "members"
            )
        }
        var members: [LiveActivityMember] = []
        var seen = Set<String>()
        for (index, item) in items.enumerated() {
            let path = "members[\(index)]"
            guard case .object(let fields) = item else {
                throw .invalid("invalid_members", "\(path) must be {\"user_id\": …, \"name\": …}", field: path)
            }
            try Reader(members: fields, path: path, what: "a member").rejectUnknown(
                ["user_id", "name"],
                hint: "a member takes user_id and name"
            )
            guard case .string(let user)? = fields["user_id"], !user.isEmpty,
                user.utf8.count <= AudienceLimits.maximumUserIDBytes
            else {
                throw .invalid(
                    "invalid_user_id",
                    "\(path).user_id must be 1 to \(AudienceLimits.maximumUserIDBytes) bytes, the user_id the "
                        + "member's devices registered with",
                    field: "\(path).user_id"
                )
            }
            guard seen.insert(user).inserted else {
                throw .invalid(
                    "duplicate_member",
                    "\(path).user_id \(user) is already a member: list each user once",
                    field: "\(path).user_id"
                )
            }
            let limit = LiveActivityLimits.maximumMemberNameCharacters
            guard case .string(let name)? = fields["name"], !name.isEmpty, name.count <= limit else {
                throw .invalid(
                    "invalid_name",
                    "\(path).name must be 1 to \(limit) characters, the name the other members see",
                    field: "\(path).name"
                )
            }
            members.append(LiveActivityMember(userID: user, name: name))
        }
        return members
    }

    /// `board`: `{"arrival_alert"?, "end_when_all_arrived"?, "nudge"?: {"after", "alert"}}`.
    private static func board(_ value: JSONValue?) throws(LiveActivityError) -> LiveActivityBoardOptions? {
        guard let value, value != .null else { return nil }
        guard case .object(let fields) = value else {
            throw .invalid(
                "invalid_board",
                #"board must be {"arrival_alert"?: {…}, "end_when_all_arrived"?: "5m", "nudge"?: {…}}"#,
                field: "board"
            )
        }
        try Reader(members: fields, path: "board", what: "a board").rejectUnknown(
            ["arrival_alert", "end_when_all_arrived", "nudge"],
            hint: "board takes arrival_alert, end_when_all_arrived and nudge"
        )
        var board = LiveActivityBoardOptions()
        board.arrivalAlert = try alert(fields, key: "arrival_alert", path: "board.arrival_alert", required: false)
        board.endWhenAllArrived = try delay(fields["end_when_all_arrived"], field: "board.end_when_all_arrived")
        if let nudge = fields["nudge"], nudge != .null {
            guard case .object(let nudgeFields) = nudge else {
                throw .invalid(
                    "invalid_nudge",
                    #"board.nudge must be {"after": "15m", "alert": {…}}"#,
                    field: "board.nudge"
                )
            }
            try Reader(members: nudgeFields, path: "board.nudge", what: "a nudge").rejectUnknown(
                ["after", "alert"],
                hint: "board.nudge takes after and alert"
            )
            guard let after = try delay(nudgeFields["after"], field: "board.nudge.after"), after > 0 else {
                throw .invalid(
                    "invalid_nudge",
                    #"board.nudge.after is missing: give how long after the start, such as "15m""#,
                    field: "board.nudge.after"
                )
            }
            let alert = try alert(nudgeFields, path: "board.nudge.alert", required: true)
            board.nudge = alert.map { LiveActivityBoardOptions.Nudge(after: after, alert: $0) }
        }
        return board
    }

    /// A delay written as `"5m"`, `"90s"` or `"1h30m"`, from 0 to 8 hours, in seconds.
    private static func delay(_ value: JSONValue?, field: String) throws(LiveActivityError) -> Int64? {
        guard let value, value != .null else { return nil }
        guard case .string(let text) = value, let seconds = DurationText.seconds(text),
            seconds <= LiveActivityLimits.maximumBoardDelay
        else {
            throw .invalid(
                "invalid_duration",
                "\(field) must be a duration from 0s to 8h, such as \"5m\", \"90s\" or \"1h30m\"",
                field: field
            )
        }
        return seconds
    }

    /// `start`: `"push"` (the default: Herald sends the push-to-start) or `"app"` (the app starts
    /// the activity itself). A push start is stored as `nil`, as before `start` existed.
    private static func start(_ value: JSONValue?) throws(LiveActivityError) -> LiveActivityStart? {
        guard let value, value != .null else { return nil }
        guard case .string(let text) = value, let start = LiveActivityStart(rawValue: text) else {
            throw .invalid(
                "invalid_start",
                "start must be \"push\" (Herald sends a push-to-start) or \"app\" (the app starts the activity)",
                field: "start"
            )
        }
        return start == .app ? .app : nil
    }

    private static func schedule(
        _ object: [String: JSONValue],
        into request: inout LiveActivityRequest,
        now: Date
    ) throws(LiveActivityError) {
        let nowSeconds = EpochTime.seconds(now)
        request.startAt = try time(object, "start_at")
        request.endAt = try time(object, "end_at")
        if let start = request.startAt {
            if start < nowSeconds - 60 {
                throw .invalid(
                    "invalid_start_at",
                    "start_at is in the past: leave it out to start now",
                    field: "start_at"
                )
            }
            if TimeInterval(start - nowSeconds) > LiveActivityLimits.maximumScheduleAhead {
                throw .invalid("invalid_start_at", "start_at is more than 366 days ahead", field: "start_at")
            }
        }
        if let end = request.endAt {
            let start = max(request.startAt ?? nowSeconds, nowSeconds)
            guard end > start else {
                throw .invalid("invalid_end_at", "end_at must be after the start (start_at, or now)", field: "end_at")
            }
            guard TimeInterval(end - start) <= LiveActivityLimits.maximumActivityDuration else {
                throw .invalid(
                    "invalid_end_at",
                    "end_at is more than 8 hours after the start: iOS ends an activity after 8 hours",
                    field: "end_at"
                )
            }
        }
    }

    private static func audience(_ value: JSONValue?) throws(LiveActivityError) -> LiveActivityAudience {
        let parsed: Audience
        do {
            parsed = try Audience.parse(value, field: "audience")
        } catch {
            throw LiveActivityError(error)
        }
        switch parsed {
        case .tokens(let tokens): return .tokens(tokens)
        case .users(let users): return .users(users)
        case .tags(.any(let tags)): return .anyTag(tags)
        case .tags(.all(let tags)): return .allTags(tags)
        case .all: return .all
        }
    }

    private static func channel(_ value: JSONValue?) throws(LiveActivityError) -> LiveActivityChannelRequest? {
        guard let value, value != .null else { return nil }
        let shape = #"{"create": true, "storage_policy": 0 or 1} or {"id": "<channel id>"}"#
        guard case .object(let object) = value else {
            throw .invalid("invalid_channel", "channel must be \(shape)", field: "channel")
        }
        try Reader(members: object, path: "channel", what: "a channel").rejectUnknown(
            ["create", "storage_policy", "id"],
            hint: "channel takes create and storage_policy, or id"
        )
        if let id = object["id"] {
            guard object.count == 1, case .string(let text) = id, (1...256).contains(text.utf8.count) else {
                throw .invalid("invalid_channel", "channel must be \(shape), not both", field: "channel.id")
            }
            do {
                try APNSChannelID(rawValue: text).validate()
            } catch {
                throw .invalid("invalid_channel_id", error.message, field: "channel.id")
            }
            return .existing(text)
        }
        guard let create = object["create"], boolean(create) == true else {
            throw .invalid("invalid_channel", "channel must be \(shape)", field: "channel.create")
        }
        var policy = 0
        if let value = object["storage_policy"], value != .null {
            guard let number = integer(value), number == 0 || number == 1 else {
                throw .invalid(
                    "invalid_storage_policy",
                    "storage_policy must be 0 (no message stored) or 1 (the most recent stored)",
                    field: "channel.storage_policy"
                )
            }
            policy = number
        }
        return .create(storagePolicy: policy)
    }
}
