import APNs
import Foundation
import HeraldCore
import LiveActivities
import Storage
import Synchronization

/// What a broadcast attempt found.
enum BoardClaim: Sendable {
    /// This attempt broadcasts `board`, with the arrival alert when one waits.
    case broadcast(board: APNSJSONValue, alert: LiveActivityAlert?)
    /// A change waits, but the interval since the last broadcast ends then.
    case later(Date)
    /// Nothing waits.
    case nothing
}

/// What a post did to the ledger.
struct BoardLedgerPost: Sendable {
    var outcome: BoardState.PostOutcome
    /// The merged board, as JSON text (``BoardState/jsonBytes()``).
    var board: [UInt8]
    /// When to attempt the broadcast of the change; `nil` when nothing changed.
    var attemptAt: Date?
}

/// A board as the hub knows it: its activity and members, and what was persisted of it.
struct BoardInfo: Sendable {
    var activity: LiveActivity
    var members: [LiveActivityMember]
    var posted: [String: Date]
    var arrived: Set<String>
    var id: UUID { activity.id }
}

/// Where the posts of a board are merged and its broadcast slot taken: in this instance's memory
/// (``MemoryBoardLedger``, for SQLite: one instance), or in PostgreSQL's unlogged tables, shared by
/// every instance on the database (``SharedBoardLedger``).
protocol BoardLedger: Sendable {
    func post(
        _ etaMinutes: Int,
        by userID: String,
        to board: BoardInfo,
        at now: Date,
        interval: TimeInterval
    )
        async throws -> BoardLedgerPost
    /// Queues the arrival alert for the next broadcast; returns when to attempt it.
    func queueAlert(
        _ alert: LiveActivityAlert,
        for board: BoardInfo,
        at now: Date,
        interval: TimeInterval
    )
        async throws -> Date
    /// Takes the broadcast slot when a change waits and the interval since the last passed.
    func claim(_ board: BoardInfo, at now: Date, interval: TimeInterval) async throws -> BoardClaim
    /// A claimed broadcast that was not accepted: its change (and alert) waits again.
    func failed(_ board: BoardInfo, alert: LiveActivityAlert?) async
    /// The board as it stands, broadcast or not (the end carries it).
    func current(_ board: BoardInfo) async throws -> APNSJSONValue
    /// The board's activity ended: its ETAs go.
    func forget(_ id: UUID) async
}

/// The boards of the one instance on a SQLite database, in memory.
final class MemoryBoardLedger: BoardLedger {
    private let boards = Mutex<[UUID: BoardState]>([:])

    private func withState<T>(_ board: BoardInfo, _ body: (inout BoardState) -> T) -> T {
        boards.withLock { boards in
            if boards[board.id] == nil {
                boards[board.id] = BoardState(members: board.members, posted: board.posted, arrived: board.arrived)
            }
            // In place: a copy out and back would copy the members on every post.
            return body(&boards[board.id]!)
        }
    }

    func post(
        _ etaMinutes: Int,
        by userID: String,
        to board: BoardInfo,
        at now: Date,
        interval: TimeInterval
    )
        -> BoardLedgerPost
    {
        withState(board) { state in
            let outcome = state.post(etaMinutes, by: userID, at: now)
            var attempt: Date?
            if case .changed = outcome { attempt = state.attemptAt(now: now, interval: interval) }
            return BoardLedgerPost(outcome: outcome, board: state.jsonBytes(), attemptAt: attempt)
        }
    }

    func queueAlert(_ alert: LiveActivityAlert, for board: BoardInfo, at now: Date, interval: TimeInterval) -> Date {
        withState(board) { state in
            state.pendingAlert = alert
            return state.attemptAt(now: now, interval: interval)
        }
    }

    func claim(_ board: BoardInfo, at now: Date, interval: TimeInterval) -> BoardClaim {
        withState(board) { $0.claim(at: now, interval: interval) }
    }

    func failed(_ board: BoardInfo, alert: LiveActivityAlert?) {
        withState(board) { $0.broadcastFailed(alert: alert) }
    }

    func current(_ board: BoardInfo) -> APNSJSONValue {
        withState(board) { $0.json }
    }

    func forget(_ id: UUID) {
        _ = boards.withLock { $0.removeValue(forKey: id) }
    }
}

/// The boards of every instance on one PostgreSQL database: each post upserts the member's ETA
/// in the unlogged `board_etas` and marks the board's row of the unlogged `board_slots` dirty;
/// the instance whose attempt finds the slot dirty and its time come takes it (a locked row:
/// one taker per interval, whichever instance) and broadcasts the board as the table holds it,
/// so an ETA posted to any instance is in the next broadcast. Unlogged tables write no WAL and
/// are not fsynced: a crash of PostgreSQL empties them (members resend), a crash of an instance
/// loses nothing of them.
struct SharedBoardLedger: BoardLedger {
    let database: any Database

    func post(
        _ etaMinutes: Int,
        by userID: String,
        to board: BoardInfo,
        at now: Date,
        interval: TimeInterval
    )
        async throws -> BoardLedgerPost
    {
        let key = LiveActivityID.text(board.id)
        let changed = try await database.queryFirst(
            """
            INSERT INTO board_etas AS e (live_activity_id, user_id, eta_minutes, updated_at) VALUES ($1, $2, $3, $4)
            ON CONFLICT (live_activity_id, user_id) DO UPDATE SET eta_minutes = excluded.eta_minutes,
                updated_at = excluded.updated_at
            WHERE e.eta_minutes <> excluded.eta_minutes AND e.eta_minutes <> 0
            RETURNING (xmax = 0) AS inserted
            """,
            [.text(key), .text(userID), .integer(Int64(etaMinutes)), .integer(EpochTime.seconds(now))]
        )
        let outcome: BoardState.PostOutcome
        var attempt: Date?
        if let changed {
            let first = try changed.bool("inserted") && board.posted[userID] == nil
            outcome = .changed(firstPost: first, arrived: etaMinutes == 0 && !board.arrived.contains(userID))
            let slot = try await database.queryFirst(
                """
                INSERT INTO board_slots (live_activity_id, next_at_ms, dirty) VALUES ($1, 0, TRUE)
                ON CONFLICT (live_activity_id) DO UPDATE SET dirty = TRUE
                RETURNING next_at_ms
                """,
                [.text(key)]
            )
            attempt = max(now, Date(timeIntervalSince1970: Double(try slot?.int("next_at_ms") ?? 0) / 1_000))
        } else {
            outcome = .unchanged(firstPost: false)
        }
        return BoardLedgerPost(outcome: outcome, board: try await view(board).jsonBytes(), attemptAt: attempt)
    }

    func queueAlert(
        _ alert: LiveActivityAlert,
        for board: BoardInfo,
        at now: Date,
        interval: TimeInterval
    )
        async throws -> Date
    {
        let slot = try await database.queryFirst(
            """
            INSERT INTO board_slots (live_activity_id, next_at_ms, dirty, alert_title, alert_body)
            VALUES ($1, 0, TRUE, $2, $3)
            ON CONFLICT (live_activity_id) DO UPDATE SET dirty = TRUE, alert_title = excluded.alert_title,
                alert_body = excluded.alert_body
            RETURNING next_at_ms
            """,
            [.text(LiveActivityID.text(board.id)), .text(alert.title), .text(alert.body)]
        )
        return max(now, Date(timeIntervalSince1970: Double(try slot?.int("next_at_ms") ?? 0) / 1_000))
    }

    func claim(_ board: BoardInfo, at now: Date, interval: TimeInterval) async throws -> BoardClaim {
        let key = LiveActivityID.text(board.id)
        let nowMS = Int64((now.timeIntervalSince1970 * 1_000).rounded(.down))
        let taken = try await database.transaction { tx -> BoardClaim in
            guard
                let slot = try await tx.queryFirst(
                    """
                    SELECT next_at_ms, dirty, alert_title, alert_body FROM board_slots
                    WHERE live_activity_id = $1 FOR UPDATE
                    """,
                    [.text(key)]
                ), try slot.bool("dirty")
            else { return .nothing }
            let nextAt = try slot.int("next_at_ms")
            if nextAt > nowMS { return .later(Date(timeIntervalSince1970: Double(nextAt) / 1_000)) }
            _ = try await tx.execute(
                """
                UPDATE board_slots SET dirty = FALSE, next_at_ms = $2, alert_title = NULL, alert_body = NULL
                WHERE live_activity_id = $1
                """,
                [.text(key), .integer(nowMS + Int64(interval * 1_000))]
            )
            let alert = try slot.optionalString("alert_title").flatMap { title in
                try slot.optionalString("alert_body").map { LiveActivityAlert(title: title, body: $0) }
            }
            return .broadcast(board: .null, alert: alert)
        }
        guard case .broadcast(_, let alert) = taken else { return taken }
        return .broadcast(board: try await view(board, arrivals: true).json, alert: alert)
    }

    func failed(_ board: BoardInfo, alert: LiveActivityAlert?) async {
        _ = try? await database.execute(
            """
            UPDATE board_slots SET dirty = TRUE, alert_title = COALESCE(alert_title, $2),
                alert_body = COALESCE(alert_body, $3)
            WHERE live_activity_id = $1
            """,
            [
                .text(LiveActivityID.text(board.id)), alert.map { .text($0.title) } ?? .null,
                alert.map { .text($0.body) } ?? .null,
            ]
        )
    }

    func current(_ board: BoardInfo) async throws -> APNSJSONValue {
        try await view(board, arrivals: true).json
    }

    func forget(_ id: UUID) async {
        let key = LiveActivityID.text(id)
        _ = try? await database.execute("DELETE FROM board_etas WHERE live_activity_id = $1", [.text(key)])
        _ = try? await database.execute("DELETE FROM board_slots WHERE live_activity_id = $1", [.text(key)])
    }

    /// The board as the tables hold it; with `arrivals`, the persisted arrivals read again (the
    /// unlogged ETAs may have been emptied since).
    private func view(_ board: BoardInfo, arrivals: Bool = false) async throws -> BoardState {
        let key = LiveActivityID.text(board.id)
        let rows = try await database.query(
            "SELECT user_id, eta_minutes, updated_at FROM board_etas WHERE live_activity_id = $1",
            [.text(key)]
        )
        var etas: [String: (minutes: Int, at: Date)] = [:]
        for row in rows {
            etas[try row.string("user_id")] = (
                Int(try row.int("eta_minutes")), Date(timeIntervalSince1970: TimeInterval(try row.int("updated_at")))
            )
        }
        var arrived = board.arrived
        if arrivals {
            let rows = try await database.query(
                "SELECT user_id FROM board_members WHERE live_activity_id = $1 AND arrived_at IS NOT NULL",
                [.text(key)]
            )
            for row in rows { arrived.insert(try row.string("user_id")) }
        }
        return BoardState(members: board.members, posted: board.posted, arrived: arrived, etas: etas)
    }
}
