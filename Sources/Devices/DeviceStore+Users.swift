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
        let sql: String
        switch selector {
        case .all:
            sql = "SELECT DISTINCT d.user_id AS user_id FROM devices d WHERE \(scope)"
        case .users(let users):
            let list = users.map { binds.add(.text($0)) }.joined(separator: ", ")
            sql = "SELECT DISTINCT d.user_id AS user_id FROM devices d WHERE \(scope) AND d.user_id IN (\(list))"
        case .anyTag(let tags), .allTags(let tags):
            let list = tags.map { binds.add(.text($0)) }.joined(separator: ", ")
            var matching = """
                SELECT t.token FROM device_tags t
                WHERE t.app = \(appBind) AND t.environment = \(environmentBind) AND t.active = 1 AND t.tag IN (\(list))
                GROUP BY t.token
                """
            if case .allTags = selector { matching += " HAVING COUNT(*) = \(binds.add(SQLValue(tags.count)))" }
            sql = "SELECT DISTINCT d.user_id AS user_id FROM devices d WHERE \(scope) AND d.token IN (\(matching))"
        }
        return try await database.query(
            sql + " ORDER BY user_id LIMIT \(binds.add(SQLValue(limit)))",
            binds.values
        ).map { try $0.string("user_id") }
    }
}
