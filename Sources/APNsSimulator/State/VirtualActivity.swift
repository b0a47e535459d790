public import APNs
public import Foundation
public import HeraldCore

/// A Live Activity on one of the simulator's virtual devices: what an iPhone's Lock Screen would
/// show, and how each change reached it.
///
/// A push-to-start (`liveactivity`, `event: start`) accepted for a token creates one there, not
/// yet allowed (``allowed`` is `false`); the user's tap on Allow (`POST
/// /devices/{token}/activities/{id}/allow`, ``APNSSimulator/allowActivity(device:id:)``) gives it
/// an update token when its start asked for one (`input-push-token: 1`). Updates arrive by that
/// token, by a broadcast on its channel (`input-push-channel`), or by a silent push the app's
/// code applies (``APNSSimulator/Configuration/applySilentLiveActivity``).
public struct APNSSimulatorActivity: Sendable, Hashable {
    /// Where the activity is in its life, as ActivityKit's `ActivityState` says.
    public enum State: String, Sendable, Hashable {
        /// Shown and accepting updates.
        case active
        /// Ended (by an `end` event, or by iOS 8 hours after its start); still on the Lock
        /// Screen until its dismissal date (at most 4 hours).
        case ended
        /// Gone from the Lock Screen.
        case dismissed
    }

    /// How a change reached the activity.
    public enum Route: String, Sendable, Hashable {
        /// The push-to-start that created it.
        case pushToStart = "push_to_start"
        /// A `liveactivity` push to its update token.
        case updateToken = "update_token"
        /// A broadcast on the channel it subscribed to.
        case broadcast
        /// A silent push whose `live-activity` object the app applied in code.
        case silent
        /// The app itself (`Activity.request`, `POST /devices/{token}/activities`).
        case app
        /// The user (Allow).
        case user
        /// iOS itself: the end 8 hours after the start, the dismissal.
        case system
    }

    /// One change, applied or ignored.
    public struct Change: Sendable, Hashable {
        /// When the simulator received it.
        public var at: Date
        /// `start`, `update`, `end`, `allow` or `dismiss`.
        public var event: String
        public var route: Route
        /// The push's `timestamp` (seconds since 1970), if it had one.
        public var timestamp: Double?
        /// Whether it changed the activity.
        public var applied: Bool
        /// Why it did not, or what else happened: `timestamp_not_newer`, `no_timestamp`,
        /// `not_active`, `channel_not_registered`.
        public var note: String?
        /// The push's `apns-id`, or the broadcast's `apns-request-id`.
        public var requestID: String?
    }

    /// An iOS-like `activity.id`: an uppercase UUID.
    public var activityID: String
    /// The token the push-to-start went to (the virtual device), lowercase.
    public var deviceToken: String
    /// The app.
    public var bundleID: String
    public var attributesType: String
    public var attributes: APNSJSONValue
    public var contentState: APNSJSONValue
    /// The alert of the last change that carried one.
    public var alert: APNSJSONValue?
    public var staleDate: Date?
    public var dismissalDate: Date?
    public var relevanceScore: Double?
    /// Whether the user tapped Allow.
    public var allowed: Bool
    /// Whether the start carried `input-push-token: 1`.
    public var requestsUpdateToken: Bool
    /// The update token (hex, 32 bytes), once allowed when asked for.
    public var updateToken: String?
    /// The broadcast channel it subscribed to (the start's `input-push-channel`, when that channel
    /// existed).
    public var channelID: String?
    public var state: State
    /// The `timestamp` of the last change applied.
    public var timestamp: Double
    public var startedAt: Date
    public var endedAt: Date?
    /// The newest ``APNSSimulatorActivity/changeLimit`` changes, oldest first.
    public var changes: [Change]

    /// Changes kept per activity; older ones go first.
    public static let changeLimit = 100
    /// iOS ends an activity this long after its start.
    public static let maximumActiveDuration: TimeInterval = 8 * 3600
    /// iOS removes an ended activity without a dismissal date this long after its end.
    public static let defaultDismissalDelay: TimeInterval = 4 * 3600

    /// Whether its stale date has passed at `now`.
    public func isStale(at now: Date) -> Bool {
        staleDate.map { $0 <= now } ?? false
    }

    mutating func record(_ change: Change) {
        if changes.count >= Self.changeLimit { changes.removeFirst(changes.count - Self.changeLimit + 1) }
        changes.append(change)
    }

    /// Moves the activity along as time passes on an iPhone: ended 8 hours after its start,
    /// dismissed at its dismissal date (4 hours after its end without one).
    mutating func settle(now: Date) {
        if state == .active, now >= startedAt.addingTimeInterval(Self.maximumActiveDuration) {
            let end = startedAt.addingTimeInterval(Self.maximumActiveDuration)
            state = .ended
            endedAt = end
            record(Change(at: end, event: "end", route: .system, timestamp: nil, applied: true))
        }
        if state == .ended, let endedAt {
            let dismissal = dismissalDate ?? endedAt.addingTimeInterval(Self.defaultDismissalDelay)
            if now >= dismissal {
                state = .dismissed
                record(
                    Change(at: max(dismissal, endedAt), event: "dismiss", route: .system, timestamp: nil, applied: true)
                )
            }
        }
    }
}
