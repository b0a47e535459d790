import Foundation
import HeraldCore
import LiveActivities
public import Storage

/// The few things a board persists (``BoardMigrations``): its row, each member's first post and
/// arrival, and the moments that happen once (first arrival, all arrived, the nudge).
public struct BoardStore: Sendable {
    public let database: any Database

    public init(database: any Database) {
        self.database = database
    }

    /// The board's row, in the transaction that creates its activity.
    func insert(_ id: UUID, at now: Date, on executor: any DatabaseExecutor) async throws {
        _ = try await executor.execute(
            "INSERT INTO boards (live_activity_id, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            [.text(LiveActivityID.text(id)), .integer(EpochTime.seconds(now))]
        )
    }

    /// The members who posted, with when they first did, and those who arrived.
    func members(of id: UUID) async throws -> (posted: [String: Date], arrived: Set<String>) {
        let rows = try await database.query(
            "SELECT user_id, posted_at, arrived_at FROM board_members WHERE live_activity_id = $1",
            [.text(LiveActivityID.text(id))]
        )
        var posted: [String: Date] = [:]
        var arrived = Set<String>()
        for row in rows {
            let user = try row.string("user_id")
            posted[user] = Date(timeIntervalSince1970: TimeInterval(try row.int("posted_at")))
            if try row.optionalInt("arrived_at") != nil { arrived.insert(user) }
        }
        return (posted, arrived)
    }

    /// What recording a post found.
    struct Recorded: Sendable, Hashable {
        /// This arrival is the board's first.
        var firstArrival = false
        /// This arrival is the last member's.
        var allArrived = false
    }

    /// Records a member's first post, or arrival: the arrival and the board's first and last
    /// arrival are set once, in one transaction, so each is reported once whichever instance
    /// records it.
    func record(
        _ userID: String,
        of id: UUID,
        arrived: Bool,
        members: Int,
        at now: Date,
        then follow: @Sendable (Recorded, any DatabaseExecutor) async throws -> Void
    ) async throws -> Recorded {
        let key = LiveActivityID.text(id)
        let time = EpochTime.seconds(now)
        return try await database.transaction { tx in
            _ = try await tx.execute(
                """
                INSERT INTO board_members (live_activity_id, user_id, posted_at, arrived_at) VALUES ($1, $2, $3, $4)
                ON CONFLICT (live_activity_id, user_id)
                DO UPDATE SET arrived_at = COALESCE(board_members.arrived_at, excluded.arrived_at)
                """,
                [.text(key), .text(userID), .integer(time), arrived ? .integer(time) : .null]
            )
            var recorded = Recorded()
            guard arrived else { return recorded }
            recorded.firstArrival =
                try await tx.execute(
                    "UPDATE boards SET first_arrival_at = $2 WHERE live_activity_id = $1 AND first_arrival_at IS NULL",
                    [.text(key), .integer(time)]
                ) == 1
            let count = try await tx.queryFirst(
                "SELECT COUNT(*) AS n FROM board_members WHERE live_activity_id = $1 AND arrived_at IS NOT NULL",
                [.text(key)]
            )
            if try count?.int("n") ?? 0 >= Int64(members) {
                recorded.allArrived =
                    try await tx.execute(
                        "UPDATE boards SET all_arrived_at = $2 WHERE live_activity_id = $1 AND all_arrived_at IS NULL",
                        [.text(key), .integer(time)]
                    ) == 1
            }
            try await follow(recorded, tx)
            return recorded
        }
    }

    /// Marks the nudge sent; `false` when it was already.
    func markNudged(_ id: UUID, at now: Date) async throws -> Bool {
        try await database.execute(
            "UPDATE boards SET nudged_at = $2 WHERE live_activity_id = $1 AND nudged_at IS NULL",
            [.text(LiveActivityID.text(id)), .integer(EpochTime.seconds(now))]
        ) == 1
    }

    /// Whether the board's nudge went.
    func nudged(_ id: UUID) async throws -> Bool {
        let row = try await database.queryFirst(
            "SELECT nudged_at FROM boards WHERE live_activity_id = $1",
            [.text(LiveActivityID.text(id))]
        )
        return try row?.optionalInt("nudged_at") != nil
    }

    /// Deletes the boards whose activity is gone (the activities' retention deleted it).
    func prune() async throws -> Int {
        let members = try await database.execute(
            "DELETE FROM board_members WHERE live_activity_id NOT IN (SELECT id FROM live_activities)",
            []
        )
        let boards = try await database.execute(
            "DELETE FROM boards WHERE live_activity_id NOT IN (SELECT id FROM live_activities)",
            []
        )
        return members + boards
    }
}
