public import APNs
import Foundation
public import HeraldCore
import Storage

/// What `GET /v1/devices` asks for: one app and environment, optional filters, a page.
public struct DeviceListQuery: Sendable, Hashable {
    public var app: String
    public var environment: APNSEnvironment
    public var userID: String?
    public var tag: String?
    public var status: DeviceStatus?
    /// Only tokens that start with it (lowercase hexadecimal).
    public var tokenPrefix: String?
    public var limit: Int
    /// The last token of the previous page (its `next_cursor`).
    public var cursor: String?

    public init(
        app: String,
        environment: APNSEnvironment,
        userID: String? = nil,
        tag: String? = nil,
        status: DeviceStatus? = nil,
        tokenPrefix: String? = nil,
        limit: Int = 100,
        cursor: String? = nil
    ) {
        self.app = app
        self.environment = environment
        self.userID = userID
        self.tag = tag
        self.status = status
        self.tokenPrefix = tokenPrefix
        self.limit = limit
        self.cursor = cursor
    }
}

extension DeviceStore {
    /// Devices of one app and environment in token order, filtered, `limit` at a time after the
    /// cursor: an index in token order (`devices_user` with a user, `devices_status` with a status,
    /// the key otherwise), each row checked for the tag by a lookup of the whole key of
    /// `device_tags` (`OFFSET 0` keeps PostgreSQL from reading the whole tag instead). `active`
    /// stands between the tag and the token in that key, so the lookup names both its values:
    /// without them SQLite, before any `ANALYZE`, reads every row of the tag for each device.
    public func list(_ query: DeviceListQuery) async throws -> Page<Device> {
        var binds = SQLBinds()
        var conditions = [
            "d.app = \(binds.add(.text(query.app)))",
            "d.environment = \(binds.add(.text(query.environment.rawValue)))",
        ]
        if let user = query.userID { conditions.append("d.user_id = \(binds.add(.text(user)))") }
        if let status = query.status { conditions.append("d.status = \(binds.add(.text(status.rawValue)))") }
        if let tag = query.tag {
            conditions.append(
                "EXISTS (SELECT 1 FROM device_tags t WHERE t.app = d.app AND t.environment = d.environment "
                    + "AND t.tag = \(binds.add(.text(tag))) AND t.active IN (0, 1) AND t.token = d.token "
                    + "LIMIT 1 OFFSET 0)"
            )
        }
        if let prefix = query.tokenPrefix {
            // Tokens are lowercase hexadecimal: those starting with the prefix sort from it up to
            // the prefix followed by "g", a range of the token index.
            conditions.append("d.token >= \(binds.add(.text(prefix)))")
            conditions.append("d.token < \(binds.add(.text(prefix + "g")))")
        }
        if let cursor = query.cursor { conditions.append("d.token > \(binds.add(.text(cursor)))") }
        let columns = Self.columns.split(separator: ",").map { "d." + $0.trimmingCharacters(in: .whitespaces) }
        let rows = try await database.query(
            """
            SELECT \(columns.joined(separator: ", ")) FROM devices d
            WHERE \(conditions.joined(separator: " AND "))
            ORDER BY d.token LIMIT \(binds.add(SQLValue(query.limit + 1)))
            """,
            binds.values
        )
        var items = try rows.map(Self.device(from:))
        var next: String?
        if items.count > query.limit {
            items.removeLast()
            next = items.last?.token
        }
        return Page(items: items, nextCursor: next)
    }
}
