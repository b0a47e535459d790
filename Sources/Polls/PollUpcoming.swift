import Foundation
public import HeraldCore
public import LiveActivities

/// The open polls of `GET /v1/client/upcoming` (``ClientUpcomingSource``): for each, its id,
/// question, `closes_at`, how many voted of how many, and the reader's own vote; the other
/// members' votes are in the poll's own read.
public struct PollUpcoming: ClientUpcomingSource {
    let store: PollStore
    /// The most polls listed.
    static let limit = 50

    public init(store: PollStore) {
        self.store = store
    }

    public var key: String { "polls" }

    public func upcoming(userID: String, app: String?) async throws -> [JSONValue] {
        try await store.open(userID: userID, app: app, limit: Self.limit).map { poll in
            let tally = poll.tally
            return .object([
                "id": .string(RequestIdentifier.lowercaseString(poll.id)),
                "app": .string(poll.app),
                "question": .string(poll.question),
                "closes_at": poll.closesAt.map { .integer(Int64($0.timeIntervalSince1970)) } ?? .null,
                "voted": .integer(Int64(tally.voted)),
                "total": .integer(Int64(tally.total)),
                "my_option": poll.members.first { $0.userID == userID }?.option.map { .string($0) } ?? .null,
                "live_activity_id": poll.liveActivityID.map { .string(RequestIdentifier.lowercaseString($0)) } ?? .null,
            ])
        }
    }
}
