import APNs
import Foundation
import HTTPRouting
import HeraldCore

/// An activity as the API shows it, built as the one grammar's value (no `Encoder` between: a page
/// of fifty activities spent most of its time in `JSONEncoder`).
struct LiveActivityBody: Sendable {
    var activity: LiveActivity
    var instances: [LiveActivityInstance]?
    var deliveries: [LiveActivityDelivery]?

    var json: JSONValue {
        let request = activity.request
        // An activity the app starts may have none: stored empty, shown as null.
        let alert = request.alert.title.isEmpty ? JSONValue.null : LiveActivityAlertBody(alert: request.alert).json
        var members: [String: JSONValue] = [
            "id": .string(LiveActivityID.text(activity.id)),
            "app": .string(activity.app),
            "environment": .string(activity.environment.rawValue),
            "state": .string(activity.state.rawValue),
            "start": .string((request.start ?? .push).rawValue),
            "failure_reason": JSONValue(activity.failureReason),
            "attributes_type": .string(activity.attributesType),
            "attributes": request.attributesSent(id: activity.id),
            "id_attribute": .string(request.idAttribute),
            "content_state": activity.contentState,
            "alert": alert,
            "audience": LiveActivityAudienceBody(audience: request.audience).json,
            "users": .array(activity.users.map(JSONValue.string)),
            "channel_id": JSONValue(activity.channelID),
            "channel_created": .bool(activity.channelCreated),
            "request_update_token": .bool(request.requestUpdateToken && activity.channelID == nil),
            "stale_date": JSONValue(request.staleDate.map(Self.date)),
            "relevance_score": request.relevanceScore.map(JSONValue.double) ?? .null,
            "start_at": JSONValue(activity.startAt),
            "end_at": JSONValue(activity.endAt),
            "started_at": JSONValue(activity.startedAt),
            "ended_at": JSONValue(activity.endedAt),
            "created_at": JSONValue(activity.createdAt),
            "updated_at": JSONValue(activity.updatedAt),
            "last_timestamp": .integer(activity.lastTimestamp),
        ]
        if let instances {
            members["instances"] = .array(instances.map { LiveActivityInstanceBody(instance: $0).json })
        }
        if let deliveries {
            members["deliveries"] = .array(deliveries.map { LiveActivityDeliveryBody(delivery: $0).json })
        }
        return .object(members)
    }

    static func date(_ seconds: Int64) -> Date { Date(timeIntervalSince1970: TimeInterval(seconds)) }
}

/// An activity as one of its users reads it (`/v1/client`): what its Lock Screen shows, nothing
/// about the other users, their instances or the deliveries.
struct LiveActivityMemberBody: Encodable, Sendable {
    var activity: LiveActivity

    enum CodingKeys: String, CodingKey {
        case id, app, state, start, attributes
        case attributesType = "attributes_type"
        case contentState = "content_state"
        case staleDate = "stale_date"
        case startAt = "start_at"
        case endAt = "end_at"
        case startedAt = "started_at"
        case endedAt = "ended_at"
        case updatedAt = "updated_at"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        let request = activity.request
        try container.encode(LiveActivityID.text(activity.id), forKey: .id)
        try container.encode(activity.app, forKey: .app)
        try container.encode(activity.state.rawValue, forKey: .state)
        try container.encode((request.start ?? .push).rawValue, forKey: .start)
        try container.encode(activity.attributesType, forKey: .attributesType)
        try container.encode(request.attributesSent(id: activity.id), forKey: .attributes)
        try container.encode(activity.contentState, forKey: .contentState)
        let stale = activity.lastUpdate?.staleDate ?? request.staleDate
        try container.encode(stale.map(LiveActivityBody.date), forKey: .staleDate)
        try container.encode(activity.startAt, forKey: .startAt)
        try container.encode(activity.endAt, forKey: .endAt)
        try container.encode(activity.startedAt, forKey: .startedAt)
        try container.encode(activity.endedAt, forKey: .endedAt)
        try container.encode(activity.updatedAt, forKey: .updatedAt)
    }
}

/// `GET /v1/client/upcoming`: `{"items": [{"type", "at", "<type>": {…}}]}`, the user's activities
/// and another feature's items (``ClientUpcomingSource``) in one list, soonest first.
struct LiveActivityUpcomingBody: Encodable, Sendable {
    enum Item: Sendable, Hashable {
        case activity(LiveActivity)
        case other(kind: String, ClientUpcomingItem)

        /// When it next needs the user: an activity when it started or is to start, another
        /// item its own time.
        var at: Date? {
            switch self {
            case .activity(let activity): activity.startedAt ?? activity.startAt ?? activity.createdAt
            case .other(_, let item): item.at
            }
        }
    }

    var items: [Item]

    /// The two lists, each soonest first, merged into one of at most `limit` (an activity before
    /// another item at the same time, an undated item after every dated one), each list's own
    /// order kept.
    static func merged(
        activities: [LiveActivity],
        kind: String,
        others: [ClientUpcomingItem],
        limit: Int
    ) -> [Item] {
        func isBefore(_ activity: LiveActivity, _ other: ClientUpcomingItem) -> Bool {
            guard let at = other.at else { return true }
            return Item.activity(activity).at.map { $0 <= at } ?? false
        }
        var merged: [Item] = []
        merged.reserveCapacity(min(limit, activities.count + others.count))
        var (a, o) = (activities[...], others[...])
        while merged.count < limit, !(a.isEmpty && o.isEmpty) {
            if let activity = a.first, o.first.map({ isBefore(activity, $0) }) ?? true {
                merged.append(.activity(activity))
                a = a.dropFirst()
            } else if let other = o.first {
                merged.append(.other(kind: kind, other))
                o = o.dropFirst()
            }
        }
        return merged
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: JSONMemberKey.self)
        var list = container.nestedUnkeyedContainer(forKey: JSONMemberKey("items"))
        for item in items {
            var entry = list.nestedContainer(keyedBy: JSONMemberKey.self)
            try entry.encode(item.at, forKey: JSONMemberKey("at"))
            switch item {
            case .activity(let activity):
                try entry.encode("live_activity", forKey: JSONMemberKey("type"))
                try entry.encode(LiveActivityMemberBody(activity: activity), forKey: JSONMemberKey("live_activity"))
            case .other(let kind, let other):
                try entry.encode(kind, forKey: JSONMemberKey("type"))
                try entry.encode(other.body, forKey: JSONMemberKey(kind))
            }
        }
    }
}

struct LiveActivityAlertBody: Sendable {
    var alert: LiveActivityAlert

    var json: JSONValue { ["title": .string(alert.title), "body": .string(alert.body)] }
}

/// The audience as given; push-to-start tokens as their first 8 characters (`token_prefixes`).
struct LiveActivityAudienceBody: Sendable {
    var audience: LiveActivityAudience

    var json: JSONValue {
        func strings(_ list: [String]) -> JSONValue { .array(list.map(JSONValue.string)) }
        return switch audience {
        case .tokens(let tokens): ["token_prefixes": strings(tokens.map(TokenPrefix.of))]
        case .users(let users): ["users": strings(users)]
        case .anyTag(let tags): ["tags": ["any": strings(tags)]]
        case .allTags(let tags): ["tags": ["all": strings(tags)]]
        case .all: ["all": true]
        }
    }
}

/// An instance; its tokens as their first 8 characters (`device_token_prefix`,
/// `update_token_prefix`).
struct LiveActivityInstanceBody: Sendable {
    var instance: LiveActivityInstance

    var json: JSONValue {
        [
            "activity_id": .string(instance.activityID),
            "user_id": JSONValue(instance.userID),
            "device_token_prefix": JSONValue(instance.deviceToken.map(TokenPrefix.of)),
            "update_token_prefix": JSONValue(instance.updateToken.map(TokenPrefix.of)),
            "state": .string(instance.state.rawValue),
            "unreachable": .bool(instance.unreachable),
            "created_at": JSONValue(instance.createdAt),
            "updated_at": JSONValue(instance.updatedAt),
        ]
    }
}

struct LiveActivityDeliveryBody: Sendable {
    var delivery: LiveActivityDelivery

    var json: JSONValue {
        [
            "at": JSONValue(delivery.at),
            "event": .string(delivery.event),
            "route": .string(delivery.route.rawValue),
            "token_prefix": JSONValue(delivery.token),
            "status": delivery.status.map { .integer(Int64($0)) } ?? .null,
            "reason": JSONValue(delivery.reason),
            "apns_id": JSONValue(delivery.apnsID),
        ]
    }
}

extension LiveActivityRouteCounts {
    /// The answer to an update or end, `{"routes":{"broadcast":…,"pending":…,"silent":…,"update_token":…}}`
    /// (sorted keys, as ``HTTPResponse/json(_:status:)`` writes them): four counts, written
    /// directly, since every update answers with it.
    var response: HTTPResponse {
        let text =
            #"{"routes":{"broadcast":\#(broadcast),"pending":\#(pending),"silent":\#(silent),"#
            + #""update_token":\#(updateToken)}}"#
        return HTTPResponse(status: 202, headers: ["Content-Type": "application/json"], body: Array(text.utf8))
    }
}

/// A push-to-start token as the API shows it: its first 8 characters (`token_prefix`).
struct PushToStartBody: Encodable, Sendable {
    var token: PushToStartToken
    var app: String
    var environment: String
    var attributesType: String
    enum CodingKeys: String, CodingKey {
        case app, environment, status
        case tokenPrefix = "token_prefix"
        case userID = "user_id"
        case attributesType = "attributes_type"
        case invalidReason = "invalid_reason"
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(TokenPrefix.of(token.token), forKey: .tokenPrefix)
        try container.encode(app, forKey: .app)
        try container.encode(environment, forKey: .environment)
        try container.encode(attributesType, forKey: .attributesType)
        try container.encode(token.userID, forKey: .userID)
        try container.encode(token.status, forKey: .status)
        try container.encode(token.invalidReason, forKey: .invalidReason)
    }
}

/// How the API shows a token it does not give back whole: its first ``length`` characters, under a
/// name that ends in `_prefix` (`token_prefix`, `device_token_prefix`, `token_prefixes`), so that
/// nobody takes it for the token.
enum TokenPrefix {
    static let length = 8

    static func of(_ token: String) -> String { String(token.prefix(length)) }
}
