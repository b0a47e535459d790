public import HeraldCore

/// The notifications API's refusals (``NotificationError``).
public enum NotificationDomain: RefusalDomain {}

/// Why a notification request was refused: invalid, too large (the body, the payload or the token
/// list), not found (no notification has the id), conflict (cancelling one that started sending),
/// or unavailable (no APNs app is configured). Messages never quote device tokens or payload
/// contents.
public typealias NotificationError = Refusal<NotificationDomain>

extension Refusal where Domain == NotificationDomain {
    static func notFound(_ id: String) -> NotificationError {
        NotificationError(
            .notFound,
            code: "not_found",
            message: "no notification has the id \(id): use the id a POST /v1/notifications answered with",
            field: "id"
        )
    }
}
