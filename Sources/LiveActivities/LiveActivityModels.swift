public import APNs
public import Foundation
public import HeraldCore

/// Where a Live Activity is in its life.
///
/// ```
/// scheduled ──start (push-to-start accepted)──▶ started ──end──▶ ended
///     │                     └─ none accepted ─▶ failed     └─ 8 h ─▶ expired
///     └── DELETE ──▶ cancelled
/// ```
///
/// An activity the app starts (``LiveActivityStart/app``) is `started` from its creation.
public enum LiveActivityState: String, Sendable, Hashable, CaseIterable, Codable {
    case scheduled, started, ended, cancelled, failed, expired
}

/// The `alert` of a start, update or end: a title and a body, shown as given.
public struct LiveActivityAlert: Sendable, Hashable, Codable {
    public var title: String
    public var body: String

    public init(title: String, body: String) {
        self.title = title
        self.body = body
    }

    var apns: APNSLiveActivityAlert { APNSLiveActivityAlert(title: .text(title), body: .text(body)) }
}

/// Who an activity is started for: the audience shape of `/v1/notifications`, read as
/// push-to-start tokens.
public enum LiveActivityAudience: Sendable, Hashable, Codable {
    /// Push-to-start tokens given directly.
    case tokens([String])
    /// The users' push-to-start tokens for the attributes type.
    case users([String])
    /// The push-to-start tokens of the users whose active devices have at least one of the tags.
    case anyTag([String])
    /// The same, for devices with every one of the tags.
    case allTags([String])
    /// The push-to-start tokens of the users of every active device.
    case all
}

/// A member of a shared activity: a user, and the name the other members see.
public struct LiveActivityMember: Sendable, Hashable, Codable {
    public var userID: String
    public var name: String

    public init(userID: String, name: String) {
        self.userID = userID
        self.name = name
    }
}

/// What a live board does besides showing the members' arrivals (`"board"` of a create).
public struct LiveActivityBoardOptions: Sendable, Hashable, Codable {
    /// Sent once, with the broadcast that shows the first arrival; `{name}` in its title or
    /// body is that member's name.
    public var arrivalAlert: LiveActivityAlert?
    /// Seconds after the last member arrived that the activity ends; `nil`: it does not end then.
    public var endWhenAllArrived: Int64?
    /// An alert push, once, to the members who posted nothing that long after the start.
    public var nudge: Nudge?

    public struct Nudge: Sendable, Hashable, Codable {
        /// Seconds after the start.
        public var after: Int64
        public var alert: LiveActivityAlert

        public init(after: Int64, alert: LiveActivityAlert) {
            self.after = after
            self.alert = alert
        }
    }

    public init(arrivalAlert: LiveActivityAlert? = nil, endWhenAllArrived: Int64? = nil, nudge: Nudge? = nil) {
        self.arrivalAlert = arrivalAlert
        self.endWhenAllArrived = endWhenAllArrived
        self.nudge = nudge
    }
}

/// Who starts an activity on the devices.
public enum LiveActivityStart: String, Sendable, Hashable, Codable {
    /// Herald, with a push-to-start to the audience's tokens (the default).
    case push
    /// The app itself (`Activity.request`), with the id Herald returned in its attributes: no
    /// push-to-start is sent, and the activity is running from its creation.
    case app
}

/// The broadcast channel of an activity, as asked for.
public enum LiveActivityChannelRequest: Sendable, Hashable, Codable {
    /// Herald creates the channel, and deletes it once the activity ended and the retention passed.
    case create(storagePolicy: Int)
    /// An existing channel, given by its id.
    case existing(String)
}

/// A validated `POST /v1/live-activities` body, app and environment not resolved yet. Stored with
/// the activity: the scheduled start reads it, and a repeated create compares it.
public struct LiveActivityRequest: Sendable, Hashable, Codable {
    public var id: UUID?
    public var app: String?
    /// `production` or `sandbox`; stored by name (``environment`` reads it).
    public var environmentName: String?
    public var attributesType: String
    public var attributes: APNSJSONValue
    public var idAttribute: String
    public var contentState: APNSJSONValue
    public var alert: LiveActivityAlert
    public var audience: LiveActivityAudience
    public var channel: LiveActivityChannelRequest?
    public var requestUpdateToken: Bool
    /// Unix seconds.
    public var staleDate: Int64?
    public var relevanceScore: Double?
    /// Unix seconds; `nil` starts now.
    public var startAt: Int64?
    /// Unix seconds; `nil` ends only when asked.
    public var endAt: Int64?
    /// ``LiveActivityStart/app`` for an activity the app starts; `nil` for a push start, so that
    /// the stored request (and the hash a repeated create compares) of a push start is what it
    /// was before apps could start activities.
    public var start: LiveActivityStart?

    /// The members of a shared activity, each with the name the others see; the audience
    /// defaults to their users.
    public var members: [LiveActivityMember]?
    /// A live board the members post their arrival to, broadcast on the activity's channel.
    public var board: LiveActivityBoardOptions?

    /// Whether the app starts the activity itself (no push-to-start).
    public var startsInApp: Bool { start == .app }

    public init(
        id: UUID? = nil,
        app: String? = nil,
        environment: APNSEnvironment? = nil,
        attributesType: String,
        attributes: APNSJSONValue,
        idAttribute: String = LiveActivityLimits.defaultIDAttribute,
        contentState: APNSJSONValue,
        alert: LiveActivityAlert,
        audience: LiveActivityAudience,
        channel: LiveActivityChannelRequest? = nil,
        requestUpdateToken: Bool = true,
        staleDate: Int64? = nil,
        relevanceScore: Double? = nil,
        startAt: Int64? = nil,
        endAt: Int64? = nil
    ) {
        self.id = id
        self.app = app
        self.environmentName = environment?.rawValue
        self.attributesType = attributesType
        self.attributes = attributes
        self.idAttribute = idAttribute
        self.contentState = contentState
        self.alert = alert
        self.audience = audience
        self.channel = channel
        self.requestUpdateToken = requestUpdateToken
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
        self.startAt = startAt
        self.endAt = endAt
    }

    public var environment: APNSEnvironment? {
        get { environmentName.flatMap(APNSEnvironment.init(rawValue:)) }
        set { environmentName = newValue?.rawValue }
    }

    /// The users an activity is started for, when the audience names them.
    public var users: [String] {
        if case .users(let users) = audience { return users }
        return []
    }

    /// The attributes sent in the start: the caller's, with `id_attribute` set to the activity's id
    /// (the caller's value under that key is replaced, never the other way round).
    public func attributesSent(id: UUID) -> APNSJSONValue {
        var object = attributes.objectValue ?? [:]
        object[idAttribute] = .string(LiveActivityID.text(id))
        return .object(object)
    }
}

/// An update or end, as accepted: what the routes send and a later instance still receives.
public struct LiveActivityUpdate: Sendable, Hashable, Codable {
    public enum Event: String, Sendable, Hashable, Codable {
        case update, end
    }

    public var event: Event
    public var contentState: APNSJSONValue
    public var alert: LiveActivityAlert?
    /// Unix seconds.
    public var staleDate: Int64?
    /// Unix seconds (end only).
    public var dismissalDate: Int64?
    public var relevanceScore: Double?
    /// 10 or 5.
    public var priority: Int
    /// Unix seconds until which APNs keeps a broadcast for subscribers it has not reached yet: only
    /// on a channel Herald created with `storage_policy` 1 (other channels take `0` only).
    public var expiration: Int64?
    /// Unix seconds, strictly greater than every earlier one of the activity.
    public var timestamp: Int64

    public init(
        event: Event,
        contentState: APNSJSONValue,
        alert: LiveActivityAlert? = nil,
        staleDate: Int64? = nil,
        dismissalDate: Int64? = nil,
        relevanceScore: Double? = nil,
        priority: Int = 10,
        timestamp: Int64 = 0,
        expiration: Int64? = nil
    ) {
        self.event = event
        self.contentState = contentState
        self.alert = alert
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore
        self.priority = priority
        self.timestamp = timestamp
        self.expiration = expiration
    }
}

/// A stored activity.
public struct LiveActivity: Sendable, Hashable {
    public var id: UUID
    public var app: String
    public var environment: APNSEnvironment
    public var attributesType: String
    public var request: LiveActivityRequest
    public var requestHash: String
    public var state: LiveActivityState
    public var failureReason: String?
    public var channelID: String?
    /// Herald created the channel (and deletes it after the end).
    public var channelCreated: Bool
    /// The latest content state sent or to send.
    public var contentState: APNSJSONValue
    /// The latest update or end accepted, which an instance registering later receives.
    public var lastUpdate: LiveActivityUpdate?
    /// The latest `timestamp` used, Unix seconds.
    public var lastTimestamp: Int64
    public var startAt: Date?
    public var endAt: Date?
    public var startedAt: Date?
    public var endedAt: Date?
    public var createdAt: Date
    public var updatedAt: Date
    /// The users it was started for.
    public var users: [String]
}

/// Where an activity runs: one iOS activity on one device.
public struct LiveActivityInstance: Sendable, Hashable {
    public enum State: String, Sendable, Hashable, CaseIterable, Codable {
        case active, ended, dismissed
    }

    public var liveActivityID: UUID
    /// The iOS `activity.id`.
    public var activityID: String
    /// The client token's `sub` that reported it.
    public var userID: String?
    public var deviceToken: String?
    public var updateToken: String?
    public var state: State
    /// APNs called the device token dead: no silent push goes to it.
    public var unreachable: Bool
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        liveActivityID: UUID,
        activityID: String,
        userID: String?,
        deviceToken: String?,
        updateToken: String?,
        state: State,
        unreachable: Bool,
        createdAt: Date,
        updatedAt: Date
    ) {
        self.liveActivityID = liveActivityID
        self.activityID = activityID
        self.userID = userID
        self.deviceToken = deviceToken
        self.updateToken = updateToken
        self.state = state
        self.unreachable = unreachable
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// How a push for an activity went out.
public enum LiveActivityRoute: String, Sendable, Hashable, CaseIterable, Codable {
    case pushToStart = "push_to_start"
    case broadcast
    case updateToken = "update_token"
    case silent
}

/// One push sent for an activity and APNs' answer.
public struct LiveActivityDelivery: Sendable, Hashable {
    public var at: Date
    /// `start`, `update` or `end`.
    public var event: String
    public var route: LiveActivityRoute
    /// The token's first 8 characters (the channel id's for a broadcast), shown as `token_prefix`.
    public var token: String?
    /// APNs' status; `nil` when no answer came (connection trouble).
    public var status: Int?
    public var reason: String?
    public var apnsID: String?

    public init(
        at: Date,
        event: String,
        route: LiveActivityRoute,
        token: String?,
        status: Int?,
        reason: String?,
        apnsID: String?
    ) {
        self.at = at
        self.event = event
        self.route = route
        self.token = token.map(TokenPrefix.of)
        self.status = status
        self.reason = reason
        self.apnsID = apnsID
    }
}

/// How many pushes an update or end takes, by route: what its 202 says.
public struct LiveActivityRouteCounts: Sendable, Hashable {
    public var broadcast = 0
    public var updateToken = 0
    public var silent = 0
    /// 1 when no instance is registered yet: the update waits for the first.
    public var pending = 0

    public init(broadcast: Int = 0, updateToken: Int = 0, silent: Int = 0, pending: Int = 0) {
        self.broadcast = broadcast
        self.updateToken = updateToken
        self.silent = silent
        self.pending = pending
    }
}

/// Activity ids as text: the lowercase UUID.
public enum LiveActivityID {
    public static func text(_ id: UUID) -> String { RequestIdentifier.lowercaseString(id) }
}

/// The limits on Live Activities input.
public enum LiveActivityLimits {
    /// The largest create body: room for 10,000 user ids or push-to-start tokens.
    public static let maximumCreateBodyBytes = 3 << 20
    /// The largest update, end, instance or push-to-start body.
    public static let maximumBodyBytes = 16 << 10
    /// Static attributes and content state together, as iOS allows (4 KB).
    public static let maximumActivityDataBytes = 4096
    /// Bytes of `attributes_type`, `id_attribute`, user ids and `activity_id`.
    public static let maximumNameBytes = 255
    /// Characters of an alert's title or body.
    public static let maximumAlertCharacters = 1_000
    /// Nesting of arrays and objects in a body.
    public static let maximumDepth = 16
    /// The key of the activity's id in its attributes, unless `id_attribute` names another.
    public static let defaultIDAttribute = "heraldID"
    /// How long iOS keeps an activity running: one not ended by then is `expired`.
    public static let maximumActivityDuration: TimeInterval = 8 * 3_600
    /// How far ahead `start_at` may be.
    public static let maximumScheduleAhead: TimeInterval = 366 * 86_400
    /// Members of a shared activity.
    public static let memberCount = 2...500
    /// A member's name, in characters.
    public static let maximumMemberNameCharacters = 64
    /// The longest `board.end_when_all_arrived` and `board.nudge.after`: an activity's life.
    public static let maximumBoardDelay: Int64 = 8 * 3_600
    /// Deliveries shown by `GET /v1/live-activities/{id}`.
    public static let deliveriesShown = 100
}
