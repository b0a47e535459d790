public import APNs
public import Foundation
public import HeraldCore
public import Jobs
public import Storage

/// A change of an activity's life that webhooks report: it started, ended (and why) or failed.
public struct LiveActivityEvent: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// A push start APNs took, or an activity the app starts, at its creation.
        case started
        case ended(LiveActivityEndReason)
        /// No push-to-start was taken, or the audience had none; the reason as the activity shows it.
        case failed(reason: String)
    }

    public var kind: Kind
    public var id: UUID
    public var app: String
    public var environment: APNSEnvironment
    public var attributesType: String
    public var at: Date

    public init(
        _ kind: Kind,
        id: UUID,
        app: String,
        environment: APNSEnvironment,
        attributesType: String,
        at: Date
    ) {
        self.kind = kind
        self.id = id
        self.app = app
        self.environment = environment
        self.attributesType = attributesType
        self.at = at
    }

    init(_ kind: Kind, _ activity: LiveActivity, at: Date) {
        self.init(
            kind,
            id: activity.id,
            app: activity.app,
            environment: activity.environment,
            attributesType: activity.attributesType,
            at: at
        )
    }
}

/// Why an activity ended.
public enum LiveActivityEndReason: String, Sendable, Hashable, CaseIterable {
    /// `POST /v1/live-activities/{id}/end`.
    case api
    /// Its `end_at` came.
    case endAt = "end_at"
    /// Eight hours after its start: iOS ended it.
    case expired
    /// A board's members all arrived, and its `end_when_all_arrived` passed.
    case allArrived = "all_arrived"
    /// The poll it shows became final (the Polls module).
    case pollFinal = "poll_final"
}

/// Hears about each activity created, inside the creating transaction: what it writes (a board's
/// row, its nudge job) commits or rolls back with the activity. `herald serve` gives the boards' one.
public protocol LiveActivityCreationHook: Sendable {
    /// Called with the activity just inserted, `executor` the creating transaction and `queue`
    /// the job queue; throwing rolls the creation back.
    func created(_ activity: LiveActivity, on executor: any DatabaseExecutor, queue: JobQueue) async throws
}

/// Hears about activities that started, ended or failed, inside the transaction that changed
/// them: what it writes (a webhook event) commits or rolls back with the change, so an event is
/// never lost nor sent for a change that did not happen. `herald serve` gives the webhooks' one.
public protocol LiveActivityEvents: Sendable {
    /// Records `events` using `executor`, the changing transaction. Throwing rolls it back.
    func liveActivitiesChanged(_ events: [LiveActivityEvent], on executor: any DatabaseExecutor) async throws

    /// Called after such a transaction committed (to wake what delivers the events).
    func liveActivityEventsCommitted()
}

/// Adds what another feature has for a user to `GET /v1/client/upcoming` (the polls' open polls),
/// in one list with the user's activities. `herald serve` gives the polls' one.
public protocol ClientUpcomingSource: Sendable {
    /// The items' `type` in the list, and the member that holds each item's body (`"poll"`).
    var kind: String { get }
    /// The user's items (of `app` when the token names one), at most `limit`, soonest first.
    func upcoming(userID: String, app: String?, limit: Int) async throws -> [ClientUpcomingItem]
}

/// One item of another feature in `GET /v1/client/upcoming`.
public struct ClientUpcomingItem: Sendable, Hashable {
    /// When it next needs the user (a poll's `closes_at`); `nil`: no time, after every dated item.
    public var at: Date?
    /// What the item shows, under the source's ``ClientUpcomingSource/kind``.
    public var body: JSONValue

    public init(at: Date?, body: JSONValue) {
        self.at = at
        self.body = body
    }
}
