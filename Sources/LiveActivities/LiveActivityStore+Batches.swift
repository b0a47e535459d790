import APNs
import Foundation
import HeraldCore
import Storage
import Synchronization

/// What accepting and routing an update read of an activity: its row without the stored request
/// and users, so a batch of them is one query.
struct LiveActivityHead: Sendable, Hashable {
    var id: UUID
    var app: String
    var environment: APNSEnvironment
    var attributesType: String
    var state: LiveActivityState
    var channelID: String?
    /// Herald created the channel, and deletes it after the end.
    var channelCreated: Bool
    /// The storage policy of the channel Herald created (1: the latest message stored); 0 else.
    var channelStoragePolicy: Int
    /// The latest content state, as stored (JSON): an end without content ends with it.
    var contentStateJSON: String
    var lastTimestamp: Int64
}

/// An instance, the timestamp of the latest update it received, and the activity's latest
/// timestamp when it was first reported.
struct LiveActivityRouteInstance: Sendable, Hashable {
    var instance: LiveActivityInstance
    var sentTimestamp: Int64
    var registeredAfter: Int64
}

/// An activity's row after a batch of accepted updates: the last one stamped, and whether it
/// ended the activity.
struct LiveActivityStamp: Sendable, Hashable {
    var id: UUID
    var latest: LiveActivityUpdate
    var ends: Bool
}

/// What routing one update wrote: its deliveries, the instances that received it, the update
/// tokens APNs called dead and the instances whose device token it called dead.
struct LiveActivityRouteWrite: Sendable {
    var id: UUID
    var timestamp: Int64
    var deliveries: [LiveActivityDelivery] = []
    var received: [String] = []
    /// (iOS activity id, update token).
    var droppedUpdateTokens: [(String, String)] = []
    /// (iOS activity id, device token).
    var unreachable: [(String, String)] = []
}

extension LiveActivityStore {
    /// At most this many rows go into one statement (9 binds a row: under both drivers' limits).
    static let rowsPerStatement = 1_000

    /// `($k, $k+1, …)` for `values`, appended to `binds`.
    private static func list(_ values: [SQLValue], binds: inout [SQLValue]) -> String {
        let base = binds.count
        binds += values
        return "(" + (1...values.count).map { "$\(base + $0)" }.joined(separator: ", ") + ")"
    }

    // MARK: Reading in batches

    /// The heads of the activities with these ids; on PostgreSQL locked until the transaction
    /// ends, in id order so two batches never wait on each other in a cycle. (SQLite's
    /// `BEGIN IMMEDIATE` holds the writer lock already.)
    func heads(_ ids: [UUID], locking: Bool, on executor: any DatabaseExecutor) async throws -> [UUID: LiveActivityHead]
    {
        guard !ids.isEmpty else { return [:] }
        var binds: [SQLValue] = []
        let list = Self.list(ids.map { .text(LiveActivityID.text($0)) }, binds: &binds)
        let lock = locking && executor.dialect == .postgres ? " ORDER BY id FOR UPDATE" : ""
        var heads: [UUID: LiveActivityHead] = [:]
        for row in try await executor.query(
            "SELECT id, app, environment, attributes_type, state, channel_id, channel_created, content_state, "
                + "last_timestamp, channel_storage_policy "
                + "FROM live_activities "
                + "WHERE id IN \(list)\(lock)",
            binds
        ) {
            let id = try row.uuid("id")
            heads[id] = LiveActivityHead(
                id: id,
                app: try row.string("app"),
                environment: APNSEnvironment(rawValue: try row.string("environment")) ?? .production,
                attributesType: try row.string("attributes_type"),
                state: LiveActivityState(rawValue: try row.string("state")) ?? .failed,
                channelID: try row.optionalString("channel_id"),
                channelCreated: try row.int("channel_created") != 0,
                channelStoragePolicy: Int(try row.int("channel_storage_policy")),
                contentStateJSON: try row.string("content_state"),
                lastTimestamp: try row.int("last_timestamp")
            )
        }
        return heads
    }

    /// The instances of these activities, oldest first within each, with what each received.
    func routeInstances(
        of ids: [UUID],
        on executor: any DatabaseExecutor
    ) async throws -> [UUID: [LiveActivityRouteInstance]] {
        guard !ids.isEmpty else { return [:] }
        var binds: [SQLValue] = []
        let list = Self.list(ids.map { .text(LiveActivityID.text($0)) }, binds: &binds)
        var instances: [UUID: [LiveActivityRouteInstance]] = [:]
        for row in try await executor.query(
            "SELECT \(Self.instanceColumns), last_timestamp, registered_after FROM live_activity_instances "
                + "WHERE live_activity_id IN \(list) ORDER BY created_at, activity_id",
            binds
        ) {
            let instance = try Self.instance(from: row)
            instances[instance.liveActivityID, default: []].append(
                LiveActivityRouteInstance(
                    instance: instance,
                    sentTimestamp: try row.int("last_timestamp"),
                    registeredAfter: try row.int("registered_after")
                )
            )
        }
        return instances
    }

    // MARK: Writing in batches

    /// Stores each activity's latest update and timestamp, and ends those an end was accepted for,
    /// in one statement per 1,000 activities, inside the caller's transaction.
    func store(_ stamps: [LiveActivityStamp], now: Date, on executor: any DatabaseExecutor) async throws {
        for start in stride(from: 0, to: stamps.count, by: Self.rowsPerStatement) {
            var binds: [SQLValue] = [SQLValue(now), .text(LiveActivityState.ended.rawValue)]
            var rows: [String] = []
            for stamp in stamps[start..<min(start + Self.rowsPerStatement, stamps.count)] {
                let base = binds.count
                binds += [
                    .text(LiveActivityID.text(stamp.id)), .integer(stamp.latest.timestamp),
                    .text(try Self.text(stamp.latest.json)), .text(try Self.text(stamp.latest.contentState)),
                    .integer(stamp.ends ? 1 : 0),
                ]
                rows.append(
                    "($\(base + 1), CAST($\(base + 2) AS BIGINT), $\(base + 3), $\(base + 4), CAST($\(base + 5) AS BIGINT))"
                )
            }
            try await executor.execute(
                """
                WITH v (id, last_timestamp, last_update, content_state, ends) AS (VALUES \(rows.joined(separator: ", ")))
                UPDATE live_activities SET last_timestamp = v.last_timestamp, last_update = v.last_update,
                    content_state = v.content_state, updated_at = $1,
                    state = CASE WHEN v.ends = 1 THEN $2 ELSE live_activities.state END,
                    ended_at = CASE WHEN v.ends = 1 THEN $1 ELSE live_activities.ended_at END
                FROM v WHERE live_activities.id = v.id
                """,
                binds
            )
        }
    }

    /// Writes what routing a batch of updates found, inside the caller's transaction: the
    /// deliveries, the timestamps the instances received, the dead update tokens dropped and the
    /// instances made unreachable.
    func record(_ writes: [LiveActivityRouteWrite], now: Date, on tx: any DatabaseExecutor) async throws {
        do {
            try await self.markReceived(writes, on: tx)
            for write in writes {
                for (activityID, token) in write.droppedUpdateTokens {
                    try await tx.execute(
                        "UPDATE live_activity_instances SET update_token = NULL, updated_at = $1 "
                            + "WHERE live_activity_id = $2 AND activity_id = $3 AND update_token = $4",
                        [SQLValue(now), .text(LiveActivityID.text(write.id)), .text(activityID), .text(token)]
                    )
                }
                for (activityID, token) in write.unreachable {
                    try await tx.execute(
                        "UPDATE live_activity_instances SET unreachable = 1, updated_at = $1 "
                            + "WHERE live_activity_id = $2 AND activity_id = $3 AND device_token = $4",
                        [SQLValue(now), .text(LiveActivityID.text(write.id)), .text(activityID), .text(token)]
                    )
                }
            }
            try await self.insert(writes.flatMap { write in write.deliveries.map { (write.id, $0) } }, on: tx)
        }
    }

    /// Raises each receiving instance's `last_timestamp` to its update's, never lowering it.
    private func markReceived(_ writes: [LiveActivityRouteWrite], on executor: any DatabaseExecutor) async throws {
        let received = writes.flatMap { write in write.received.map { (write.id, $0, write.timestamp) } }
        for start in stride(from: 0, to: received.count, by: Self.rowsPerStatement) {
            var binds: [SQLValue] = []
            var rows: [String] = []
            for (id, activityID, timestamp) in received[start..<min(start + Self.rowsPerStatement, received.count)] {
                let base = binds.count
                binds += [.text(LiveActivityID.text(id)), .text(activityID), .integer(timestamp)]
                rows.append("($\(base + 1), $\(base + 2), CAST($\(base + 3) AS BIGINT))")
            }
            try await executor.execute(
                """
                WITH v (live_activity_id, activity_id, last_timestamp) AS (VALUES \(rows.joined(separator: ", ")))
                UPDATE live_activity_instances SET last_timestamp = v.last_timestamp FROM v
                WHERE live_activity_instances.live_activity_id = v.live_activity_id
                    AND live_activity_instances.activity_id = v.activity_id
                    AND live_activity_instances.last_timestamp < v.last_timestamp
                """,
                binds
            )
        }
    }

    /// Inserts delivery rows of any activities, 1,000 a statement.
    func insert(_ deliveries: [(UUID, LiveActivityDelivery)], on executor: any DatabaseExecutor) async throws {
        for start in stride(from: 0, to: deliveries.count, by: Self.rowsPerStatement) {
            var binds: [SQLValue] = []
            var rows: [String] = []
            for (id, delivery) in deliveries[start..<min(start + Self.rowsPerStatement, deliveries.count)] {
                rows.append(
                    Self.list(
                        [
                            .text(LiveActivityID.text(id)), SQLValue(delivery.at),
                            .text(Self.deliveryID()),
                            .text(delivery.event), .text(delivery.route.rawValue), SQLValue(delivery.token),
                            SQLValue(delivery.status), SQLValue(delivery.reason), SQLValue(delivery.apnsID),
                        ],
                        binds: &binds
                    )
                )
            }
            try await executor.execute(
                "INSERT INTO live_activity_deliveries (live_activity_id, at, id, event, route, token, status, reason, "
                    + "apns_id) VALUES \(rows.joined(separator: ", "))",
                binds
            )
        }
    }
}

/// The process's count of deliveries written, for ``LiveActivityStore/deliveryID()``.
private let deliveriesWritten = Atomic<UInt64>(0)

extension LiveActivityStore {
    /// A delivery row's id: a count in this process, zero-padded so that ids sort as written, then
    /// random bits drawn for this id (a resource id's: nothing shared with request ids). Deliveries recorded in the same millisecond (a dead update
    /// token's 410 and the silent push that replaced it) are listed newest first, in the order
    /// they happened.
    static func deliveryID() -> String {
        let count = deliveriesWritten.wrappingAdd(1, ordering: .relaxed).newValue
        let hex = String(count, radix: 16)
        return String(repeating: "0", count: max(0, 16 - hex.utf8.count)) + hex + "-"
            + RequestIdentifier.lowercaseString(ResourceIdentifier.next()).suffix(17)
    }
}
