import Audiences
import Devices
import Foundation

/// How far a notification has come over the devices resolved so far (`progress` in
/// `GET /v1/notifications/{id}`):
///
/// - `resolved`: devices the audience resolved to until now, each with a result row: the tokens
///   given, or the active devices read from the registry so far;
/// - `sent`: APNs accepted the push;
/// - `failed`: a final result other than sent: rejected, dead or failed;
/// - `pending`: resolved devices without a final result yet (pending or retrying);
/// - `resolving`: devices remain to be read from the registry (then `resolved` still grows).
///
/// `resolved` = `sent` + `failed` + `pending` + the cancelled count (in `counts`).
struct ProgressBody: Encodable, Sendable {
    var resolved: Int
    var sent: Int
    var pending: Int
    var failed: Int
    var resolving: Bool

    init(_ notification: StoredNotification, counts: DeliveryCounts) {
        resolved = counts.total
        sent = counts[.sent]
        pending = counts[.pending] + counts[.retrying]
        failed = counts[.rejected] + counts[.dead] + counts[.failed]
        resolving = notification.audienceResolvedAt == nil && notification.status != .cancelled
    }
}

/// An audience as it was given: `{"users": […]}`, `{"tags": {"any": […]}}`, `{"all": true}` or
/// `{"tokens": […]}`.
struct AudienceBody: Encodable, Sendable {
    var audience: Audience

    enum CodingKeys: String, CodingKey {
        case tokens, users, tags, all
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch audience {
        case .tokens(let tokens): try container.encode(tokens, forKey: .tokens)
        case .users(let users): try container.encode(users, forKey: .users)
        case .tags(.any(let tags)): try container.encode(["any": tags], forKey: .tags)
        case .tags(.all(let tags)): try container.encode(["all": tags], forKey: .tags)
        case .all: try container.encode(true, forKey: .all)
        }
    }
}
