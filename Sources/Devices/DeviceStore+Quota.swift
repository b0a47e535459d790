import APNs
import Foundation
import HeraldCore
import Storage

/// The per-user quota (``DeviceStore/maximumDevicesPerUser``): a registration that leaves a user
/// with more active devices in an app and environment evicts the least recently registered ones,
/// so a real user with many reinstalls is never refused and no user grows without bound.
///
/// Concurrency: devices join a user only through a registration, and a registration takes a
/// transaction-scoped lock per (app, environment, user) before it touches a device row (PostgreSQL
/// `pg_advisory_xact_lock`, in one order; SQLite has one writer at a time). The count and the
/// eviction therefore see every device that joined the user before; devices may only leave it
/// meanwhile (moved to another user, invalidated, deleted), which the eviction's `FOR UPDATE` read
/// waits for, so two registrations at once never leave a user over the quota.
extension DeviceStore {
    /// The reason an evicted device carries.
    public static let evictedReason = "evicted"

    /// The advisory lock class of user quota locks ("DEVC"); the second key is ``lockKey(_:)``.
    static let quotaLockClass: Int32 = 0x4445_5643

    /// A user of an app and environment.
    struct UserKey: Hashable, Comparable {
        var app: String
        var environment: APNSEnvironment
        var user: String

        static func < (lhs: UserKey, rhs: UserKey) -> Bool {
            (lhs.app, lhs.environment.rawValue, lhs.user) < (rhs.app, rhs.environment.rawValue, rhs.user)
        }
    }

    /// A 32-bit key for a user's quota lock, the same in every process (FNV-1a over the UTF-8 of
    /// app, environment and user separated by NUL). Two users sharing a key only wait for each other.
    static func lockKey(_ key: UserKey) -> Int32 {
        var hash: UInt32 = 0x811C_9DC5
        for byte in Array(key.app.utf8) + [0] + Array(key.environment.rawValue.utf8) + [0] + Array(key.user.utf8) {
            hash ^= UInt32(byte)
            hash = hash &* 0x0100_0193
        }
        return Int32(bitPattern: hash)
    }

    /// Takes the quota lock of every user the registrations name, in key order (PostgreSQL only).
    func lockUsers(of registrations: [DeviceRegistration], on executor: any DatabaseExecutor) async throws {
        guard executor.dialect == .postgres else { return }
        let users = Set(
            registrations.compactMap { registration in
                registration.userID.map {
                    UserKey(app: registration.app, environment: registration.environment, user: $0)
                }
            }
        )
        let keys = Set(users.map(Self.lockKey)).sorted()
        guard !keys.isEmpty else { return }
        var binds = SQLBinds()
        let rows = keys.enumerated().map { index, key in "(\(binds.add(.integer(Int64(key))))::integer, \(index))" }
        // The target list is evaluated after the sort, so the locks are taken in key order.
        try await executor.execute(
            "SELECT pg_advisory_xact_lock(\(Self.quotaLockClass), v.k) FROM (VALUES \(rows.joined(separator: ", "))) "
                + "AS v (k, n) ORDER BY v.n",
            binds.values
        )
    }

    /// Evicts, for every user with an active device among `stored`, the least recently registered
    /// active devices past the quota (the devices just registered last of all), and marks them so
    /// in `stored`.
    ///
    /// - Returns: whether any device was evicted.
    func enforceQuota(
        _ registrations: [DeviceRegistration],
        stored: inout [DeviceKey: RegisteredDevice],
        on executor: any DatabaseExecutor
    ) async throws -> Bool {
        var registered: [UserKey: Set<String>] = [:]
        var now: [UserKey: Date] = [:]
        for registration in registrations {
            guard let user = registration.userID, stored[DeviceKey(registration)]?.device.status == .active else {
                continue
            }
            let key = UserKey(app: registration.app, environment: registration.environment, user: user)
            registered[key, default: []].insert(registration.token)
            now[key] = max(now[key] ?? registration.registeredAt, registration.registeredAt)
        }
        guard !registered.isEmpty else { return false }
        var evictedAny = false
        for user in try await usersOverQuota(Set(registered.keys), on: executor) {
            // usersOverQuota answers among the users asked about, each of which has both entries.
            guard let tokens = registered[user], let at = now[user] else { continue }
            let evicted = try await evict(user, keeping: tokens, at: at, on: executor)
            for event in evicted {
                let key = DeviceKey(app: user.app, environment: user.environment, token: event.token)
                guard var result = stored[key] else { continue }
                result.device.status = .invalid
                result.device.invalidReason = Self.evictedReason
                result.device.invalidAt = event.invalidAt
                result.device.invalidRecordedAt = event.invalidAt
                result.device.invalidNotificationID = nil
                result.device.updatedAt = event.invalidAt
                stored[key] = result
            }
            evictedAny = evictedAny || !evicted.isEmpty
        }
        return evictedAny
    }

    /// The users with more active devices than the quota, in key order.
    ///
    /// The status is tested in the count, not the WHERE: with `status = 'active'` there, SQLite
    /// before any ANALYZE searched one user's devices through `devices_status`, reading every
    /// active device of the app on each registration (0.3-0.5 s at 188,000 devices).
    private func usersOverQuota(_ users: Set<UserKey>, on executor: any DatabaseExecutor) async throws -> [UserKey] {
        var over: [UserKey] = []
        let groups = Dictionary(grouping: users) { GroupKey(app: $0.app, environment: $0.environment) }
        for (group, members) in groups {
            let names = members.map(\.user).sorted()
            var start = 0
            while start < names.count {
                let end = min(start + Self.batchSize(executor.dialect), names.count)
                var binds = SQLBinds()
                _ = binds.add(.text(group.app))
                _ = binds.add(.text(group.environment.rawValue))
                let list = names[start..<end].map { binds.add(.text($0)) }.joined(separator: ", ")
                let limit = binds.add(.integer(Int64(maximumDevicesPerUser)))
                let rows = try await executor.query(
                    """
                    SELECT user_id FROM devices WHERE app = $1 AND environment = $2 AND user_id IN (\(list))
                    GROUP BY user_id HAVING COUNT(*) FILTER (WHERE status = 'active') > \(limit)
                    """,
                    binds.values
                )
                for row in rows {
                    over.append(
                        UserKey(app: group.app, environment: group.environment, user: try row.string("user_id"))
                    )
                }
                start = end
            }
        }
        return over.sorted()
    }

    /// Evicts the user's least recently registered active devices past the quota, the tokens in
    /// `keeping` (just registered) ranked newest; reports them as invalidations.
    private func evict(
        _ user: UserKey,
        keeping: Set<String>,
        at now: Date,
        on executor: any DatabaseExecutor
    ) async throws -> [DeviceInvalidatedEvent] {
        let scope: [SQLValue] = [.text(user.app), .text(user.environment.rawValue)]
        // Locked in token order; a device another transaction is moving away is waited for and,
        // once gone, not read.
        let lock = executor.dialect == .postgres ? " FOR UPDATE" : ""
        let active = try await executor.query(
            "SELECT token, last_registered_at FROM devices WHERE app = $1 AND environment = $2 AND user_id = $3 "
                + "AND status = 'active' ORDER BY token" + lock,
            scope + [.text(user.user)]
        ).map { row in (token: try row.string("token"), at: try row.optionalDate("last_registered_at")) }
        guard active.count > maximumDevicesPerUser else { return [] }
        let ranked = active.sorted { lhs, rhs in
            let (lhsKept, rhsKept) = (keeping.contains(lhs.token), keeping.contains(rhs.token))
            if lhsKept != rhsKept { return lhsKept }
            let (lhsAt, rhsAt) = (lhs.at ?? .distantPast, rhs.at ?? .distantPast)
            if lhsAt != rhsAt { return lhsAt > rhsAt }
            return lhs.token > rhs.token
        }
        let victims = ranked.dropFirst(maximumDevicesPerUser).map(\.token).sorted()
        var events: [DeviceInvalidatedEvent] = []
        var start = 0
        while start < victims.count {
            let end = min(start + Self.batchSize(executor.dialect), victims.count)
            var binds = SQLBinds()
            _ = binds.add(.text(user.app))
            _ = binds.add(.text(user.environment.rawValue))
            let at = binds.add(SQLValue(now))
            let reason = binds.add(.text(Self.evictedReason))
            let list = victims[start..<end].map { binds.add(.text($0)) }.joined(separator: ", ")
            let changed = try await executor.query(
                """
                UPDATE devices SET status = 'invalid', invalid_reason = \(reason), invalid_at = \(at),
                    invalid_recorded_at = \(at), invalid_notification_id = NULL, updated_at = \(at)
                WHERE app = $1 AND environment = $2 AND status = 'active' AND token IN (\(list))
                RETURNING token
                """,
                binds.values
            ).map { try $0.string("token") }
            try await deactivateTags(
                of: changed,
                in: GroupKey(app: user.app, environment: user.environment),
                on: executor
            )
            events += changed.sorted().map {
                DeviceInvalidatedEvent(
                    token: $0,
                    app: user.app,
                    environment: user.environment,
                    reason: Self.evictedReason,
                    invalidAt: now
                )
            }
            start = end
        }
        if !events.isEmpty, let sink = self.events { try await sink.devicesInvalidated(events, on: executor) }
        if !events.isEmpty {
            metrics.invalidations.increment(by: Double(events.count), labels: [("reason", Self.evictedReason)])
        }
        return events
    }
}
