public import Foundation
import HeraldCore
public import Storage

extension LiveActivityStore {
    static let instanceColumns =
        "live_activity_id, activity_id, user_id, device_token, update_token, state, unreachable, created_at, updated_at"

    /// Creates or replaces an instance (by its iOS `activity_id`) inside the caller's transaction,
    /// which holds the activity's lock (``lockedActivity(_:on:)``): the count of the user's
    /// instances cannot change under it. A field the report leaves out keeps its stored value; a
    /// new device token makes the instance reachable again. An instance belongs to the user who
    /// reported it first: the row keeps that user.
    ///
    /// - Parameters:
    ///   - registeredAfter: the activity's latest timestamp now, kept from the first report:
    ///     updates stamped at or before it are the catch-up job's to send.
    ///   - maximumPerUser: the instances one user may have of the activity; a new one past it is
    ///     refused.
    /// - Returns: the instance as stored and whether it was new.
    /// - Throws: ``LiveActivityError/notYourInstance`` when another user reported it first,
    ///   ``LiveActivityError/tooManyInstances(_:)`` past the quota; nothing is written then.
    func upsert(
        _ instance: LiveActivityInstance,
        registeredAfter: Int64,
        maximumPerUser: Int,
        on executor: any DatabaseExecutor
    ) async throws -> (LiveActivityInstance, created: Bool, gainedRoute: Bool) {
        let key: [SQLValue] = [.text(LiveActivityID.text(instance.liveActivityID)), .text(instance.activityID)]
        let existing = try await executor.queryFirst(
            "SELECT \(Self.instanceColumns) FROM live_activity_instances WHERE live_activity_id = $1 AND activity_id = $2",
            key
        ).map(Self.instance(from:))
        if let existing, existing.userID != instance.userID { throw LiveActivityError.notYourInstance }
        if existing == nil {
            let count =
                try await executor.queryFirst(
                    "SELECT COUNT(*) AS n FROM live_activity_instances WHERE live_activity_id = $1 AND user_id = $2",
                    [key[0], SQLValue(instance.userID)]
                )?.int("n") ?? 0
            guard count < Int64(maximumPerUser) else { throw LiveActivityError.tooManyInstances(maximumPerUser) }
        }
        var merged = instance
        if let existing {
            merged.deviceToken = instance.deviceToken ?? existing.deviceToken
            merged.updateToken = instance.updateToken ?? existing.updateToken
            merged.unreachable = instance.deviceToken == nil ? existing.unreachable : false
            merged.createdAt = existing.createdAt
        }
        try await executor.execute(
            """
            INSERT INTO live_activity_instances (\(Self.instanceColumns), registered_after)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
            ON CONFLICT (live_activity_id, activity_id) DO UPDATE SET device_token = excluded.device_token, update_token = excluded.update_token, state = excluded.state,
                unreachable = excluded.unreachable, updated_at = excluded.updated_at
            """,
            key + [
                SQLValue(merged.userID), SQLValue(merged.deviceToken), SQLValue(merged.updateToken),
                .text(merged.state.rawValue), .bool(merged.unreachable), SQLValue(merged.createdAt),
                SQLValue(merged.updatedAt), .integer(registeredAfter),
            ]
        )
        // Known before with neither token, it could receive nothing; now it can.
        let gainedRoute =
            existing.map { $0.deviceToken == nil && $0.updateToken == nil } == true
            && (merged.deviceToken != nil || merged.updateToken != nil)
        return (merged, existing == nil, gainedRoute)
    }

    /// The instances of an activity, oldest first.
    public func instances(
        of id: UUID,
        on executor: (any DatabaseExecutor)? = nil
    ) async throws -> [LiveActivityInstance] {
        try await (executor ?? database).query(
            "SELECT \(Self.instanceColumns) FROM live_activity_instances WHERE live_activity_id = $1 "
                + "ORDER BY created_at, activity_id",
            [.text(LiveActivityID.text(id))]
        ).map(Self.instance(from:))
    }

    static func instance(from row: SQLRow) throws -> LiveActivityInstance {
        LiveActivityInstance(
            liveActivityID: try row.uuid("live_activity_id"),
            activityID: try row.string("activity_id"),
            userID: try row.optionalString("user_id"),
            deviceToken: try row.optionalString("device_token"),
            updateToken: try row.optionalString("update_token"),
            state: LiveActivityInstance.State(rawValue: try row.string("state")) ?? .active,
            unreachable: try row.bool("unreachable"),
            createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at")
        )
    }

    // MARK: Deliveries

    /// Records pushes sent for an activity.
    func record(_ deliveries: [LiveActivityDelivery], of id: UUID) async throws {
        guard !deliveries.isEmpty else { return }
        try await insert(deliveries.map { (id, $0) }, on: database)
    }

    /// The latest `limit` deliveries of an activity, newest first.
    public func deliveries(
        of id: UUID,
        limit: Int = LiveActivityLimits.deliveriesShown
    ) async throws
        -> [LiveActivityDelivery]
    {
        try await database.query(
            "SELECT at, event, route, token, status, reason, apns_id FROM live_activity_deliveries "
                + "WHERE live_activity_id = $1 ORDER BY at DESC, id DESC LIMIT $2",
            [.text(LiveActivityID.text(id)), .integer(Int64(limit))]
        ).map { row in
            LiveActivityDelivery(
                at: try row.date("at"),
                event: try row.string("event"),
                route: LiveActivityRoute(rawValue: try row.string("route")) ?? .silent,
                token: try row.optionalString("token"),
                status: try row.optionalInt("status").map { Int($0) },
                reason: try row.optionalString("reason"),
                apnsID: try row.optionalString("apns_id")
            )
        }
    }
}
