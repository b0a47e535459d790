public import HeraldCore

/// The Live Activities API's refusals (``LiveActivityError``).
public enum LiveActivityDomain: RefusalDomain {}

/// Why a Live Activities request was refused: invalid, too large, not found (no activity has the
/// id), conflict (its state does not allow it, or the id is taken by another body), unprocessable
/// (no push-to-start token to start with), forbidden (not the client token's), unavailable (APNs
/// or a channel down or not set up). Messages never quote whole tokens.
public typealias LiveActivityError = Refusal<LiveActivityDomain>

extension Refusal where Domain == LiveActivityDomain {
    /// No activity with this id.
    public static var notFound: LiveActivityError {
        LiveActivityError(
            .notFound,
            code: "not_found",
            message: "no Live Activity has this id: create it with POST /v1/live-activities",
            field: "id"
        )
    }

    /// An update or end for an activity that is not running.
    public static func notStarted(_ state: LiveActivityState) -> LiveActivityError {
        LiveActivityError(
            .conflict,
            code: "not_started",
            message: "the activity is \(state.rawValue): only a started activity takes updates and ends"
        )
    }
}

extension Refusal where Domain == LiveActivityDomain {
    /// An instance (the activity's iOS `activity_id`) another user reported first: only a user of
    /// the activity ever gets this answer.
    public static var notYourInstance: LiveActivityError {
        LiveActivityError(
            .forbidden,
            code: "not_your_instance",
            message: "another user reported this instance of the activity first: an instance belongs to the user "
                + "who reported it; report the activity.id of an activity running on your own device",
            field: "activity_id"
        )
    }

    /// A user at ``LiveActivityQuotas/maximumInstancesPerUser`` reports one more instance.
    public static func tooManyInstances(_ limit: Int) -> LiveActivityError {
        LiveActivityError(
            .conflict,
            code: "too_many_instances",
            message: "this user has reported \(limit) instances of the activity, the most allowed "
                + "(HERALD_MAX_INSTANCES_PER_USER): report again an instance already known (same activity_id) "
                + "to update it",
            field: "activity_id"
        )
    }
}
