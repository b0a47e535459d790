import APNs
import Audiences
import Devices
import Foundation
public import HTTPRouting
import HeraldCore

extension NotificationRoutes {
    /// The query parameters of `GET /v1/notifications`.
    static let listParameters = ["status", "app", "created_after", "created_before"] + Paging.parameters

    func list(_ request: HTTPRequest) async throws -> HTTPResponse {
        let page = try await service.list(try Self.parseList(request))
        return .json(
            PageBody("notifications", page.items.map { NotificationSummaryBody($0).json }, nextCursor: page.nextCursor)
                .json
        )
    }

    /// `GET /v1/notifications`: every query parameter checked (400 naming it).
    public static func parseList(_ request: HTTPRequest) throws(HTTPError) -> NotificationListQuery {
        var status: NotificationStatus?
        if let text = request.queryValue("status") {
            guard let parsed = NotificationStatus(rawValue: text) else {
                throw HTTPError(
                    status: 400,
                    code: "invalid_status",
                    message: "status must be one of "
                        + NotificationStatus.allCases.map(\.rawValue).joined(separator: ", "),
                    field: "status"
                )
            }
            status = parsed
        }
        var cursor: NotificationCursor?
        if let text = request.queryValue("cursor") {
            guard let parsed = NotificationCursor(text) else { throw Paging.invalidCursor() }
            cursor = parsed
        }
        let after = try time(request, "created_after")
        let before = try time(request, "created_before")
        if let after, let before, after >= before {
            throw HTTPError(
                status: 400,
                code: "invalid_created_before",
                message: "created_before must be later than created_after: no notification can match",
                field: "created_before"
            )
        }
        return NotificationListQuery(
            status: status,
            app: try app(request),
            createdAfter: after,
            createdBefore: before,
            limit: try request.pageLimit(),
            cursor: cursor
        )
    }
}

/// A notification in a list: what `GET /v1/notifications/{id}` shows without counts or results
/// (``NotificationBody`` adds those).
struct NotificationSummaryBody: Encodable, Sendable {
    var id: String
    var app: String
    var environment: String
    var pushType: String
    var topic: String
    var status: String
    var failureReason: String?
    var sendAt: Date
    var createdAt: Date
    var updatedAt: Date
    var tokens: Int
    var audienceKind: String

    init(_ notification: StoredNotification) {
        id = notification.id.uuidString.lowercased()
        app = notification.app
        environment = notification.environment.rawValue
        pushType = notification.pushType.headerValue
        topic = notification.topic
        status = notification.status.rawValue
        failureReason = notification.failureReason
        sendAt = notification.sendAt
        createdAt = notification.createdAt
        updatedAt = notification.updatedAt
        tokens = notification.tokenCount
        audienceKind = notification.audienceKind.rawValue
    }

    /// The summary as the one grammar's value (`failure_reason` only when there is one): a page
    /// of notifications is written from these with no `Encoder` between.
    var json: JSONValue {
        var members: [String: JSONValue] = [
            "id": .string(id), "app": .string(app), "environment": .string(environment), "push_type": .string(pushType),
            "topic": .string(topic), "status": .string(status), "send_at": JSONValue(sendAt),
            "created_at": JSONValue(createdAt), "updated_at": JSONValue(updatedAt), "tokens": .integer(Int64(tokens)),
            "audience_kind": .string(audienceKind),
        ]
        if let failureReason { members["failure_reason"] = .string(failureReason) }
        return .object(members)
    }

    /// ``json``'s members, into the encoder's object (a notification's body adds its own beside them).
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: JSONMemberKey.self)
        for (key, value) in json.objectValue ?? [:] { try container.encode(value, forKey: JSONMemberKey(key)) }
    }
}
