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

    /// Devices per multi-row statement (10 binds each, well under both databases' bind limits).
    static let batchSize = 500

    public init(database: any Database, events: (any DeviceEvents)? = nil, metrics: MetricsRegistry = .shared) {
        self.database = database
        self.events = events
        self.metrics = DeviceMetrics(registry: metrics)
    }

    static let columns = """
        app, environment, token, user_id, tags, locale, timezone, app_version, platform, status, invalid_reason, \
        invalid_at, invalid_recorded_at, invalid_notification_id, created_at, updated_at, last_registered_at
        """

    // MARK: Registering

    /// Registers (creates or replaces) devices in one transaction, in batched statements.
    ///
    /// - Returns: one result per registration, in order. A device registered twice in the list
    ///   is stored once, as its last registration says.
    public func register(_ registrations: [DeviceRegistration]) async throws -> [RegisteredDevice] {
        guard !registrations.isEmpty else { return [] }
        let store = self
        return try await database.transaction { tx in try await store.register(registrations, on: tx) }
    }

    /// ``register(_:)`` inside the caller's transaction.
    public func register(
        _ registrations: [DeviceRegistration],
        on executor: any DatabaseExecutor
    ) async throws -> [RegisteredDevice] {
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
            var start = 0
            while start < members.count {
                let end = min(start + Self.batchSize, members.count)
                for result in try await upsert(Array(members[start..<end]), group: group, on: executor) {
                    stored[DeviceKey(result.device)] = result
                }
                start = end
            }
        }
        let results = registrations.map { stored[DeviceKey($0)] }.compactMap { $0 }
        for result in results {
            metrics.registrations.increment(labels: [("result", result.created ? "created" : "updated")])
        }
        return results
    }

    /// A device invalid at a time at or after the registration's stays invalid (the registration is stale).
    private static let stale =
        "devices.status = 'invalid' AND COALESCE(devices.invalid_at, devices.invalid_recorded_at) "
        + ">= excluded.last_registered_at"

    private func upsert(
        _ members: [DeviceRegistration],
        group: GroupKey,
        on executor: any DatabaseExecutor
    ) async throws -> [RegisteredDevice] {
        var binds = SQLBinds()
        let app = binds.add(.text(group.app))
        let environment = binds.add(.text(group.environment.rawValue))
        let list = members.map { binds.add(.text($0.token)) }.joined(separator: ", ")
        let lock = executor.dialect == .postgres ? " FOR UPDATE" : ""
        let existing = Set(
            try await executor.query(
                "SELECT token FROM devices WHERE app = \(app) AND environment = \(environment) AND token IN (\(list))"
                    + lock,
                binds.values
            ).map { try $0.string("token") }
        )

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
        try await replaceTags(of: members, existing: existing, group: group, on: executor)
        return try upserted.map { row in
            let device = try Self.device(from: row)
            return RegisteredDevice(device: device, created: !existing.contains(device.token))
        }
    }

    /// Deletes the tags of the devices that existed and inserts every member's tags.
    private func replaceTags(
        of members: [DeviceRegistration],
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
        let pairs = members.flatMap { member in member.tags.map { (member.token, $0) } }
        var start = 0
        // Two binds per tag: at most 4,000 per statement.
        while start < pairs.count {
            let end = min(start + 2_000, pairs.count)
            var binds = SQLBinds()
            _ = binds.add(.text(group.app))
            _ = binds.add(.text(group.environment.rawValue))
            let rows = pairs[start..<end].map { pair in
                "($1, $2, \(binds.add(.text(pair.1))), \(binds.add(.text(pair.0))))"
            }
            try await executor.execute(
                "INSERT INTO device_tags (app, environment, tag, token) VALUES \(rows.joined(separator: ", "))",
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

    /// Deletes the device and its tags; `false` when none had this key.
    @discardableResult
    public func delete(app: String, environment: APNSEnvironment, token: String) async throws -> Bool {
        try await database.transaction { tx in
            let binds: [SQLValue] = [.text(app), .text(environment.rawValue), .text(token)]
            try await tx.execute("DELETE FROM device_tags WHERE app = $1 AND environment = $2 AND token = $3", binds)
            return try await tx.execute("DELETE FROM devices WHERE app = $1 AND environment = $2 AND token = $3", binds)
                > 0
        }
    }

    // MARK: Rows

    static func tagsText(_ tags: [String]) -> String {
        guard !tags.isEmpty, let data = try? JSONEncoder().encode(tags) else { return "[]" }
        return String(decoding: data, as: UTF8.self)
    }

    static func device(from row: SQLRow) throws -> Device {
        let tagsText = try row.string("tags")
        let tags = (try? JSONDecoder().decode([String].self, from: Data(tagsText.utf8))) ?? []
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
