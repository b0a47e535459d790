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
