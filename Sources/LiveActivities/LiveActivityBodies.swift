import APNs
import Foundation
import HTTPRouting
import HeraldCore

/// An activity as the API shows it.
struct LiveActivityBody: Encodable, Sendable {
    var activity: LiveActivity
    var instances: [LiveActivityInstance]?
    var deliveries: [LiveActivityDelivery]?

    enum CodingKeys: String, CodingKey {
        case id, app, environment, state, start, attributes, alert, audience, instances, deliveries, users
        case attributesType = "attributes_type"
        case idAttribute = "id_attribute"
        case contentState = "content_state"
        case failureReason = "failure_reason"
        case channelID = "channel_id"
        case channelCreated = "channel_created"
        case requestUpdateToken = "request_update_token"
        case staleDate = "stale_date"
        case relevanceScore = "relevance_score"
        case startAt = "start_at"
        case endAt = "end_at"
        case startedAt = "started_at"
        case endedAt = "ended_at"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case lastTimestamp = "last_timestamp"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        let request = activity.request
        try container.encode(LiveActivityID.text(activity.id), forKey: .id)
        try container.encode(activity.app, forKey: .app)
        try container.encode(activity.environment.rawValue, forKey: .environment)
        try container.encode(activity.state.rawValue, forKey: .state)
        try container.encode((request.start ?? .push).rawValue, forKey: .start)
        try container.encode(activity.failureReason, forKey: .failureReason)
        try container.encode(activity.attributesType, forKey: .attributesType)
        try container.encode(request.attributesSent(id: activity.id), forKey: .attributes)
        try container.encode(request.idAttribute, forKey: .idAttribute)
        try container.encode(activity.contentState, forKey: .contentState)
        // An activity the app starts may have none: stored empty, shown as null.
        let alert = request.alert.title.isEmpty ? nil : LiveActivityAlertBody(alert: request.alert)
        try container.encode(alert, forKey: .alert)
        try container.encode(LiveActivityAudienceBody(audience: request.audience), forKey: .audience)
        try container.encode(activity.users, forKey: .users)
        try container.encode(activity.channelID, forKey: .channelID)
        try container.encode(activity.channelCreated, forKey: .channelCreated)
        try container.encode(request.requestUpdateToken && activity.channelID == nil, forKey: .requestUpdateToken)
        try container.encode(request.staleDate.map(Self.date), forKey: .staleDate)
        try container.encode(request.relevanceScore, forKey: .relevanceScore)
        try container.encode(activity.startAt, forKey: .startAt)
        try container.encode(activity.endAt, forKey: .endAt)
        try container.encode(activity.startedAt, forKey: .startedAt)
        try container.encode(activity.endedAt, forKey: .endedAt)
        try container.encode(activity.createdAt, forKey: .createdAt)
        try container.encode(activity.updatedAt, forKey: .updatedAt)
        try container.encode(activity.lastTimestamp, forKey: .lastTimestamp)
        if let instances { try container.encode(instances.map(LiveActivityInstanceBody.init), forKey: .instances) }
        if let deliveries { try container.encode(deliveries.map(LiveActivityDeliveryBody.init), forKey: .deliveries) }
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

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        var list = container.nestedUnkeyedContainer(forKey: Key(stringValue: "items"))
        for item in items {
            var entry = list.nestedContainer(keyedBy: Key.self)
            try entry.encode(item.at, forKey: Key(stringValue: "at"))
            switch item {
            case .activity(let activity):
                try entry.encode("live_activity", forKey: Key(stringValue: "type"))
                try entry.encode(LiveActivityMemberBody(activity: activity), forKey: Key(stringValue: "live_activity"))
            case .other(let kind, let other):
                try entry.encode(kind, forKey: Key(stringValue: "type"))
                try entry.encode(other.body, forKey: Key(stringValue: kind))
            }
        }
    }
}

struct LiveActivityAlertBody: Encodable, Sendable {
    var alert: LiveActivityAlert
    enum CodingKeys: String, CodingKey { case title, body }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(alert.title, forKey: .title)
        try container.encode(alert.body, forKey: .body)
    }
}

/// The audience as given; push-to-start tokens as their first 8 characters (`token_prefixes`).
struct LiveActivityAudienceBody: Encodable, Sendable {
    var audience: LiveActivityAudience
    enum CodingKeys: String, CodingKey {
        case users, tags, all
        case tokenPrefixes = "token_prefixes"
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch audience {
        case .tokens(let tokens): try container.encode(tokens.map(TokenPrefix.of), forKey: .tokenPrefixes)
        case .users(let users): try container.encode(users, forKey: .users)
        case .anyTag(let tags): try container.encode(["any": tags], forKey: .tags)
        case .allTags(let tags): try container.encode(["all": tags], forKey: .tags)
        case .all: try container.encode(true, forKey: .all)
        }
    }
}

/// An instance; its tokens as their first 8 characters (`device_token_prefix`,
/// `update_token_prefix`).
struct LiveActivityInstanceBody: Encodable, Sendable {
    var instance: LiveActivityInstance
    enum CodingKeys: String, CodingKey {
        case state, unreachable
        case activityID = "activity_id"
        case userID = "user_id"
        case deviceTokenPrefix = "device_token_prefix"
        case updateTokenPrefix = "update_token_prefix"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(instance.activityID, forKey: .activityID)
        try container.encode(instance.userID, forKey: .userID)
        try container.encode(instance.deviceToken.map(TokenPrefix.of), forKey: .deviceTokenPrefix)
        try container.encode(instance.updateToken.map(TokenPrefix.of), forKey: .updateTokenPrefix)
        try container.encode(instance.state.rawValue, forKey: .state)
        try container.encode(instance.unreachable, forKey: .unreachable)
        try container.encode(instance.createdAt, forKey: .createdAt)
        try container.encode(instance.updatedAt, forKey: .updatedAt)
    }
}

struct LiveActivityDeliveryBody: Encodable, Sendable {
    var delivery: LiveActivityDelivery
    enum CodingKeys: String, CodingKey {
        case at, event, route, status, reason
        case tokenPrefix = "token_prefix"
        case apnsID = "apns_id"
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(delivery.at, forKey: .at)
        try container.encode(delivery.event, forKey: .event)
        try container.encode(delivery.route.rawValue, forKey: .route)
        try container.encode(delivery.token, forKey: .tokenPrefix)
        try container.encode(delivery.status, forKey: .status)
        try container.encode(delivery.reason, forKey: .reason)
        try container.encode(delivery.apnsID, forKey: .apnsID)
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
