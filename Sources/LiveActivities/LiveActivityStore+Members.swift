import Foundation
import HeraldCore
import Storage

extension LiveActivityStore {
    /// The most activities `GET /v1/client/upcoming` lists.
    static let upcomingLimit = 50

    /// ``columns`` of the `a` alias, for the join with the users.
    private static let aliasedColumns = columns.split(separator: ",")
        .map { "a." + $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        .joined(separator: ", ")

    /// The scheduled and started activities `userID` is a user of (of `app` when given), running
    /// ones first, then by start time, at most ``upcomingLimit``.
    func upcoming(userID: String, app: String?) async throws -> [LiveActivity] {
        var binds: [SQLValue] = [.text(userID), .text(LiveActivityState.scheduled.rawValue)]
        binds.append(.text(LiveActivityState.started.rawValue))
        var appFilter = ""
        if let app {
            binds.append(.text(app))
            appFilter = " AND a.app = $\(binds.count)"
        }
        binds.append(.integer(Int64(Self.upcomingLimit)))
        let rows = try await database.query(
            """
            SELECT \(Self.aliasedColumns) FROM live_activities a
            JOIN live_activity_users u ON u.live_activity_id = a.id
            WHERE u.user_id = $1 AND a.state IN ($2, $3)\(appFilter)
            ORDER BY CASE WHEN a.state = $3 THEN 0 ELSE 1 END, COALESCE(a.started_at, a.start_at, a.created_at), a.id
            LIMIT $\(binds.count)
            """,
            binds
        )
        // The other users are not the reader's business: none are read.
        return try rows.map { try Self.decode($0, users: []) }
    }
}
