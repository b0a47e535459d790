import Foundation
import HeraldCore
public import LiveActivities

/// The open polls of `GET /v1/client/upcoming` (``ClientUpcomingSource``), soonest closing first
/// (`at` is `closes_at`; a poll without one comes after every dated item): for each, its id,
/// question, `closes_at`, how many voted of how many, and the reader's own vote; the other
/// members' votes are in the poll's own read.
public struct PollUpcoming: ClientUpcomingSource {
    let store: PollStore

    public init(store: PollStore) {
        self.store = store
    }

    public var kind: String { "poll" }

    public func upcoming(userID: String, app: String?, limit: Int) async throws -> [ClientUpcomingItem] {
        try await store.open(userID: userID, app: app, limit: limit).map { poll in
            let tally = poll.tally
            let body: JSONValue = .object([
                "id": .string(RequestIdentifier.lowercaseString(poll.id)),
                "app": .string(poll.app),
                "question": .string(poll.question),
                "closes_at": poll.closesAt.map { .integer(Int64($0.timeIntervalSince1970)) } ?? .null,
                "voted": .integer(Int64(tally.voted)),
                "total": .integer(Int64(tally.total)),
                "my_option": poll.members.first { $0.userID == userID }?.option.map { .string($0) } ?? .null,
                "live_activity_id": poll.liveActivityID.map { .string(RequestIdentifier.lowercaseString($0)) } ?? .null,
            ])
            return ClientUpcomingItem(at: poll.closesAt, body: body)
        }
    }
}
