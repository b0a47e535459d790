public import APNs
public import Audiences
import Foundation
import Storage

extension DeviceStore {
    /// The users of the active devices an audience selects (each once, in user order), at most
    /// `limit`: Live Activities read a `tags` or `all` audience as these users' push-to-start tokens.
    public func users(
        app: String,
        environment: APNSEnvironment,
        selector: AudienceSelector,
        limit: Int = AudienceLimits.maximumUsers
    ) async throws -> [String] {
        var binds = SQLBinds()
        let appBind = binds.add(.text(app))
        let environmentBind = binds.add(.text(environment.rawValue))
        let scope =
            "d.app = \(appBind) AND d.environment = \(environmentBind) AND d.status = 'active' "
            + "AND d.user_id IS NOT NULL"
        // Each way in is searched by the users or the tags it names: SQLite, before any ANALYZE,
        // read every active device (status in the WHERE beside user_id IN) or every tag of the app
        // (tags grouped by token) instead.
        let sql: String
        switch selector {
        case .all:
            sql = "SELECT DISTINCT d.user_id AS user_id FROM devices d WHERE \(scope)"
        case .users(let users):
            let list = users.map { binds.add(.text($0)) }.joined(separator: ", ")
            sql = """
                SELECT d.user_id AS user_id FROM devices d
                WHERE d.app = \(appBind) AND d.environment = \(environmentBind) AND d.user_id IN (\(list))
                GROUP BY d.user_id HAVING COUNT(*) FILTER (WHERE d.status = 'active') > 0
                """
        case .anyTag(let tags):
            let list = tags.map { binds.add(.text($0)) }.joined(separator: ", ")
            sql = """
                SELECT DISTINCT d.user_id AS user_id FROM devices d WHERE \(scope) AND d.token IN (
                    SELECT t.token FROM device_tags t
                    WHERE t.app = \(appBind) AND t.environment = \(environmentBind) AND t.active = 1 AND t.tag IN (\(list)))
                """
        case .allTags(let tags):
            let each = tags.map { tag in
                "SELECT t.token FROM device_tags t WHERE t.app = \(appBind) AND t.environment = \(environmentBind) "
                    + "AND t.active = 1 AND t.tag = \(binds.add(.text(tag)))"
            }
            sql =
                "SELECT DISTINCT d.user_id AS user_id FROM devices d WHERE \(scope) AND d.token IN ("
                + each.joined(separator: " INTERSECT ") + ")"
        }
        return try await database.query(
            sql + " ORDER BY user_id LIMIT \(binds.add(SQLValue(limit)))",
            binds.values
        ).map { try $0.string("user_id") }
    }
}
