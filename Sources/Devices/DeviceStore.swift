public import APNs
import Foundation
public import HeraldCore
public import Storage

/// The `devices` and `device_tags` tables (migration 7), with the same SQL on SQLite and
/// PostgreSQL.
///
/// ```swift
/// let store = DeviceStore(database: db)
/// let registered = try await store.register([DeviceRegistration(token: t, app: "com.example.app",
///     environment: .production, userID: "u1", tags: ["news"], registeredAt: now)])
/// let page = try await store.activeTokens(app: "com.example.app", environment: .production,
///     selector: .anyTag(["news"]), after: nil, limit: 1_000)
/// ```
///
/// The dead-token rule (Apple's): APNs' 410 with timestamp T marks a device invalid at T unless it
/// registered after T; a registration stamped after T makes it active again, one stamped at or
/// before T (a stale retry) leaves it invalid. `BadDeviceToken` and `DeviceTokenNotForTopic` are
/// stamped with the time of APNs' answer and follow the same rule.
public struct DeviceStore: Sendable {
    public let database: any Database
    /// Told, inside the same transaction, about devices that became invalid.
    public let events: (any DeviceEvents)?
    let metrics: DeviceMetrics

    /// Devices per multi-row statement (up to 8 binds each). SQLite looks each `$n` up in a list
    /// of the statement's names, a cost that grows with the square of the binds: it gets short
    /// statements; PostgreSQL, where each statement is a round trip, long ones.
    static func batchSize(_ dialect: SQLDialect) -> Int {
        dialect == .sqlite ? 64 : 500
    }

    /// Active devices at most per user per app and environment (`HERALD_CLIENT_MAX_DEVICES`): a
    /// registration past it evicts the user's least recently registered devices.
    public let maximumDevicesPerUser: Int

    public init(
        database: any Database,
        events: (any DeviceEvents)? = nil,
        metrics: MetricsRegistry = .shared,
        maximumDevicesPerUser: Int = DeviceLimits.defaultMaximumDevicesPerUser
    ) {
        self.database = database
        self.events = events
        self.metrics = DeviceMetrics(registry: metrics)
        self.maximumDevicesPerUser = max(1, maximumDevicesPerUser)
    }

    static let columns = """
        app, environment, token, user_id, tags, locale, timezone, app_version, platform, status, invalid_reason, \
        invalid_at, invalid_recorded_at, invalid_notification_id, created_at, updated_at, last_registered_at
        """

    // MARK: Registering

    /// Registers (creates or replaces) devices in one transaction, in batched statements.
    ///
    /// A device registered to another user than before is a reassignment (counted, and reported to
    /// ``events``); a user left with more than ``maximumDevicesPerUser`` active devices in an app
    /// and environment has the least recently registered ones evicted (invalid, reason
    /// `evicted`, reported as invalidations), in the same transaction.
    ///
    /// - Returns: one result per registration, in order. A device registered twice in the list
    ///   is stored once, as its last registration says.
    public func register(_ registrations: [DeviceRegistration]) async throws -> [RegisteredDevice] {
        guard !registrations.isEmpty else { return [] }
        let store = self
        var attempt = 1
        while true {
            do {
                let (results, reported) = try await database.transaction { tx in
                    try await store.registerReporting(registrations, on: tx)
                }
                if reported { events?.invalidationsCommitted() }
                return results
            } catch let error as DatabaseError where error.code == .serializationFailure && attempt < 3 {
                // Two users swapping tokens at once, both past the quota, can each wait for a row the
                // other moves (PostgreSQL then aborts one): the aborted one runs again.
                attempt += 1
            }
        }
    }

    /// ``register(_:)`` inside the caller's transaction; the caller calls
    /// ``DeviceEvents/invalidationsCommitted()`` on ``events`` after its commit.
    public func register(
        _ registrations: [DeviceRegistration],
        on executor: any DatabaseExecutor
    ) async throws -> [RegisteredDevice] {
        try await registerReporting(registrations, on: executor).results
    }

    /// ``register(_:on:)``, and whether anything was reported to ``events``.
    private func registerReporting(
        _ registrations: [DeviceRegistration],
        on executor: any DatabaseExecutor
    ) async throws -> (results: [RegisteredDevice], reported: Bool) {
        // Registrations of one user are serialised (PostgreSQL) before any device row is locked,
        // so that two at once cannot both find room under the quota.
        try await lockUsers(of: registrations, on: executor)
        // The last registration of a device wins; a statement must not touch one row twice.
        var latest: [DeviceKey: Int] = [:]
        for (index, registration) in registrations.enumerated() { latest[DeviceKey(registration)] = index }
        var groups: [GroupKey: [DeviceRegistration]] = [:]
        for (index, registration) in registrations.enumerated() where latest[DeviceKey(registration)] == index {
            groups[GroupKey(app: registration.app, environment: registration.environment), default: []]
                .append(registration)
        }
        var stored: [DeviceKey: RegisteredDevice] = [:]
        for (group, members) in groups.sorted(by: {
            ($0.key.app, $0.key.environment.rawValue) < ($1.key.app, $1.key.environment.rawValue)
        }) {
            // In token order: concurrent batches on PostgreSQL then lock shared rows in one order.
            let sorted = members.sorted { $0.token < $1.token }
            var start = 0
            while start < sorted.count {
                let end = min(start + Self.batchSize(executor.dialect), sorted.count)
                for result in try await upsert(Array(sorted[start..<end]), group: group, on: executor) {
                    stored[DeviceKey(result.device)] = result
                }
                start = end
            }
        }
        var reassigned: [DeviceReassignedEvent] = []
        for result in stored.values.sorted(by: { $0.device.token < $1.device.token }) {
            guard let from = result.previousUserID, let to = result.device.userID, from != to else { continue }
            reassigned.append(
                DeviceReassignedEvent(
                    token: result.device.token,
                    app: result.device.app,
                    environment: result.device.environment,
                    fromUserID: from,
                    toUserID: to
                )
            )
        }
        if !reassigned.isEmpty, let sink = events { try await sink.devicesReassigned(reassigned, on: executor) }
        let evicted = try await enforceQuota(registrations, stored: &stored, on: executor)
        let results = registrations.map { stored[DeviceKey($0)] }.compactMap { $0 }
        let created = results.reduce(0) { $0 + ($1.created ? 1 : 0) }
        if created > 0 { metrics.registrations.increment(by: Double(created), labels: [("result", "created")]) }
        if created < results.count {
            metrics.registrations.increment(by: Double(results.count - created), labels: [("result", "updated")])
        }
        if !reassigned.isEmpty { metrics.reassignments.increment(by: Double(reassigned.count)) }
        return (results, (!reassigned.isEmpty || evicted) && events != nil)
    }

    /// A device APNs called dead at a time at or after the registration's stays invalid (the
    /// registration is stale). A device the quota evicted is not dead: any registration revives it,
    /// even one stamped before the eviction but committed after it.
    private static let stale =
        "devices.status = 'invalid' AND devices.invalid_reason IS DISTINCT FROM '\(evictedReason)' "
        + "AND COALESCE(devices.invalid_at, devices.invalid_recorded_at) >= excluded.last_registered_at"

    private func upsert(
        _ members: [DeviceRegistration],
        group: GroupKey,
        on executor: any DatabaseExecutor
    ) async throws -> [RegisteredDevice] {
        var binds = SQLBinds()
        let app = binds.add(.text(group.app))
        let environment = binds.add(.text(group.environment.rawValue))
        let wanted = members.map { "(\(binds.add(.text($0.token))))" }.joined(separator: ", ")
        let lock = executor.dialect == .postgres ? " FOR UPDATE OF d" : ""
        var owners: [String: String?] = [:]
        // A join on the whole key: as `token IN (…)`, SQLite before any ANALYZE read every device of
        // the app through `devices_user`, which covers token and user_id, for every 64 tokens
        // (registering slowed from 2,600 to 340 devices a second as the table grew).
        for row in try await executor.query(
            "WITH wanted (token) AS (VALUES \(wanted)) SELECT d.token, d.user_id FROM wanted JOIN devices d "
                + "ON d.app = \(app) AND d.environment = \(environment) AND d.token = wanted.token" + lock,
            binds.values
        ) {
            owners[try row.string("token")] = .some(try row.optionalString("user_id"))
        }
        let existing = Set(owners.keys)

        binds = SQLBinds()
        _ = binds.add(.text(group.app))
        _ = binds.add(.text(group.environment.rawValue))
        var rows: [String] = []
        rows.reserveCapacity(members.count)
        for member in members {
            let token = binds.add(.text(member.token))
            let user = binds.add(SQLValue(member.userID))
            let tags = binds.add(.text(Self.tagsText(member.tags)))
            let locale = binds.add(SQLValue(member.locale))
            let timezone = binds.add(SQLValue(member.timezone))
            let version = binds.add(SQLValue(member.appVersion))
            let platform = binds.add(SQLValue(member.platform?.rawValue))
            let at = binds.add(SQLValue(member.registeredAt))
            rows.append(
                "($1, $2, \(token), \(user), \(tags), \(locale), \(timezone), \(version), \(platform), 'active', "
                    + "\(at), \(at), \(at))"
            )
        }
        let stale = Self.stale
        let upserted = try await executor.query(
            """
            INSERT INTO devices (app, environment, token, user_id, tags, locale, timezone, app_version, platform, \
            status, created_at, updated_at, last_registered_at)
            VALUES \(rows.joined(separator: ", "))
            ON CONFLICT (app, environment, token) DO UPDATE SET user_id = excluded.user_id, tags = excluded.tags,
                locale = excluded.locale, timezone = excluded.timezone, app_version = excluded.app_version,
                platform = excluded.platform,
                created_at = CASE WHEN excluded.user_id IS NOT NULL AND devices.user_id IS DISTINCT FROM excluded.user_id
                    THEN excluded.created_at ELSE devices.created_at END,
                status = CASE WHEN \(stale) THEN 'invalid' ELSE 'active' END,
                invalid_reason = CASE WHEN \(stale) THEN devices.invalid_reason ELSE NULL END,
                invalid_at = CASE WHEN \(stale) THEN devices.invalid_at ELSE NULL END,
                invalid_recorded_at = CASE WHEN \(stale) THEN devices.invalid_recorded_at ELSE NULL END,
                invalid_notification_id = CASE WHEN \(stale) THEN devices.invalid_notification_id ELSE NULL END,
                updated_at = excluded.updated_at,
                last_registered_at = CASE WHEN devices.last_registered_at IS NULL
                    OR excluded.last_registered_at > devices.last_registered_at
                    THEN excluded.last_registered_at ELSE devices.last_registered_at END
            RETURNING \(Self.columns)
            """,
            binds.values
        )
        // The upsert sets every row's tags to the registration's: no need to decode them back.
        var tagsByToken: [String: [String]] = [:]
        tagsByToken.reserveCapacity(members.count)
        for member in members { tagsByToken[member.token] = member.tags }
        let results = try upserted.map { row in
            let device = try Self.device(from: row, tags: tagsByToken[try row.string("token")])
            return RegisteredDevice(
                device: device,
                created: !existing.contains(device.token),
                previousUserID: owners[device.token] ?? nil
            )
        }
        try await replaceTags(of: results.map(\.device), existing: existing, group: group, on: executor)
        return results
    }

    /// Deletes the tags of the devices that existed and inserts every device's tags, marked with
    /// its status (a stale registration leaves its device invalid).
    private func replaceTags(
        of devices: [Device],
        existing: Set<String>,
        group: GroupKey,
        on executor: any DatabaseExecutor
    ) async throws {
        if !existing.isEmpty {
            var binds = SQLBinds()
            _ = binds.add(.text(group.app))
            _ = binds.add(.text(group.environment.rawValue))
            let list = existing.sorted().map { binds.add(.text($0)) }.joined(separator: ", ")
            try await executor.execute(
                "DELETE FROM device_tags WHERE app = $1 AND environment = $2 AND token IN (\(list))",
                binds.values
            )
        }
        let pairs = devices.flatMap { device in device.tags.map { (device, $0) } }
        var start = 0
        // Two binds per tag.
        let perStatement = 4 * Self.batchSize(executor.dialect)
        while start < pairs.count {
            let end = min(start + perStatement, pairs.count)
            var binds = SQLBinds()
            _ = binds.add(.text(group.app))
            _ = binds.add(.text(group.environment.rawValue))
            let rows = pairs[start..<end].map { pair in
                "($1, $2, \(binds.add(.text(pair.1))), \(pair.0.status == .active ? 1 : 0), "
                    + "\(binds.add(.text(pair.0.token))))"
            }
            try await executor.execute(
                "INSERT INTO device_tags (app, environment, tag, active, token) VALUES \(rows.joined(separator: ", "))",
                binds.values
            )
            start = end
        }
    }

    // MARK: Reading and deleting

    /// The device, or `nil` when none has this key.
    public func device(app: String, environment: APNSEnvironment, token: String) async throws -> Device? {
        try await database.queryFirst(
            "SELECT \(Self.columns) FROM devices WHERE app = $1 AND environment = $2 AND token = $3",
            [.text(app), .text(environment.rawValue), .text(token)]
        ).map(Self.device(from:))
    }

    /// Deletes the device and its tags; `false` when none had this key (or, with `owner`, when
    /// the device is not registered to that user: the same answer, so a client learns nothing of
    /// other users' devices).
    @discardableResult
    public func delete(
        app: String,
        environment: APNSEnvironment,
        token: String,
        ownedBy owner: String? = nil
    ) async throws -> Bool {
        try await database.transaction { tx in
            var binds: [SQLValue] = [.text(app), .text(environment.rawValue), .text(token)]
            var condition = "app = $1 AND environment = $2 AND token = $3"
            if let owner {
                binds.append(.text(owner))
                condition += " AND user_id = $4"
            }
            guard try await tx.execute("DELETE FROM devices WHERE \(condition)", binds) > 0 else { return false }
            try await tx.execute(
                "DELETE FROM device_tags WHERE app = $1 AND environment = $2 AND token = $3",
                Array(binds.prefix(3))
            )
            return true
        }
    }

    // MARK: Rows

    /// The `tags` column: a JSON array of strings, written by hand (a `JSONEncoder` per device was
    /// a large part of a batch registration's cost).
    static func tagsText(_ tags: [String]) -> String {
        guard !tags.isEmpty else { return "[]" }
        return "[" + tags.map(JSONText.quote).joined(separator: ",") + "]"
    }

    static func device(from row: SQLRow) throws -> Device {
        try device(from: row, tags: nil)
    }

    /// - Parameter tags: the row's tags when the caller knows them (it just wrote them); `nil`
    ///   decodes the `tags` column.
    static func device(from row: SQLRow, tags known: [String]?) throws -> Device {
        let tags: [String]
        if let known {
            tags = known
        } else {
            let stored = try? JSONValue.parse(Array(try row.string("tags").utf8))
            if case .array(let items)? = stored { tags = items.compactMap(\.stringValue) } else { tags = [] }
        }
        return Device(
            token: try row.string("token"),
            app: try row.string("app"),
            environment: APNSEnvironment(rawValue: try row.string("environment")) ?? .production,
            userID: try row.optionalString("user_id"),
            tags: tags,
            locale: try row.optionalString("locale"),
            timezone: try row.optionalString("timezone"),
            appVersion: try row.optionalString("app_version"),
            platform: try row.optionalString("platform").flatMap(DevicePlatform.init(rawValue:)),
            status: DeviceStatus(rawValue: try row.string("status")) ?? .invalid,
            invalidReason: try row.optionalString("invalid_reason"),
            invalidAt: try row.optionalDate("invalid_at"),
            invalidRecordedAt: try row.optionalDate("invalid_recorded_at"),
            invalidNotificationID: try row.optionalUUID("invalid_notification_id"),
            createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at"),
            lastRegisteredAt: try row.optionalDate("last_registered_at")
        )
    }
}

/// A device's key.
struct DeviceKey: Hashable {
    var app: String
    var environment: APNSEnvironment
    var token: String

    init(app: String, environment: APNSEnvironment, token: String) {
        self.app = app
        self.environment = environment
        self.token = token
    }

    init(_ registration: DeviceRegistration) {
        app = registration.app
        environment = registration.environment
        token = registration.token
    }

    init(_ device: Device) {
        app = device.app
        environment = device.environment
        token = device.token
    }
}

/// An app and environment: the scope every device statement runs in.
struct GroupKey: Hashable {
    var app: String
    var environment: APNSEnvironment
}

/// Binds collected while a statement is written: ``add(_:)`` returns the placeholder.
struct SQLBinds {
    private(set) var values: [SQLValue] = []

    mutating func add(_ value: SQLValue) -> String {
        values.append(value)
        return "$\(values.count)"
    }
}
