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
    /// cursor.
    ///
    /// - With a tag and no user, the page is drawn from `device_tags`, whose key holds each tag's
    ///   tokens in order under `active`: at most `limit + 1` tokens from each `active` value the
    ///   status allows, merged, then their devices by key. Walking the devices instead and probing
    ///   each for the tag read every device of the app for a rare tag.
    /// - Otherwise an index in token order (`devices_user` with a user, `devices_status` with a
    ///   status, the key otherwise), each row checked for the tag by a lookup of the whole key of
    ///   `device_tags` (`OFFSET 0` keeps PostgreSQL from reading the whole tag instead). `active`
    ///   stands between the tag and the token in that key, so the lookup names both its values:
    ///   without them SQLite, before any `ANALYZE`, reads every row of the tag for each device.
    public func list(_ query: DeviceListQuery) async throws -> Page<Device> {
        var binds = SQLBinds()
        let app = binds.add(.text(query.app))
        let environment = binds.add(.text(query.environment.rawValue))
        var conditions = ["d.app = \(app)", "d.environment = \(environment)"]
        var tokenRange: [String] = []
        if let prefix = query.tokenPrefix {
            // Tokens are lowercase hexadecimal: those starting with the prefix sort from it up to
            // the prefix followed by "g", a range of the token index.
            tokenRange.append(">= \(binds.add(.text(prefix)))")
            tokenRange.append("< \(binds.add(.text(prefix + "g")))")
        }
        if let cursor = query.cursor { tokenRange.append("> \(binds.add(.text(cursor)))") }
        conditions += tokenRange.map { "d.token " + $0 }
        if let user = query.userID { conditions.append("d.user_id = \(binds.add(.text(user)))") }
        if let status = query.status { conditions.append("d.status = \(binds.add(.text(status.rawValue)))") }
        let limit = binds.add(SQLValue(query.limit + 1))
        var from = "devices d"
        if let tag = query.tag {
            let tagBind = binds.add(.text(tag))
            if query.userID == nil {
                let actives = query.status.map { [$0 == .active ? 1 : 0] } ?? [1, 0]
                let arms = actives.enumerated().map { index, active in
                    "SELECT token FROM (SELECT t.token FROM device_tags t WHERE t.app = \(app) "
                        + "AND t.environment = \(environment) AND t.tag = \(tagBind) AND t.active = \(active)"
                        + tokenRange.map { " AND t.token " + $0 }.joined()
                        + " ORDER BY t.token LIMIT \(limit)) AS a\(index)"
                }
                from = "(\(arms.joined(separator: " UNION ALL "))) AS w JOIN devices d ON d.token = w.token"
            } else {
                conditions.append(
                    "EXISTS (SELECT 1 FROM device_tags t WHERE t.app = d.app AND t.environment = d.environment "
                        + "AND t.tag = \(tagBind) AND t.active IN (0, 1) AND t.token = d.token LIMIT 1 OFFSET 0)"
                )
            }
        }
        let columns = Self.columns.split(separator: ",").map { "d." + $0.trimmingCharacters(in: .whitespaces) }
        let rows = try await database.query(
            """
            SELECT \(columns.joined(separator: ", ")) FROM \(from)
            WHERE \(conditions.joined(separator: " AND "))
            ORDER BY d.token LIMIT \(limit)
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
