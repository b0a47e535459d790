public import APNs
public import Audiences
import Foundation
package import Storage

/// Which active devices of an app and environment an audience means.
public enum AudienceSelector: Sendable, Hashable {
    /// Every active device.
    case all
    /// The active devices of these users.
    case users([String])
    /// Active devices with at least one of these tags.
    case anyTag([String])
    /// Active devices with every one of these tags.
    case allTags([String])
}

extension Audience {
    /// The registry query of an audience resolved at send time; `nil` for `tokens`.
    public var selector: AudienceSelector? {
        switch self {
        case .tokens: nil
        case .users(let users): .users(users)
        case .tags(.any(let tags)): .anyTag(tags)
        case .tags(.all(let tags)): .allTags(tags)
        case .all: .all
        }
    }
}

/// Where a page of an audience ends. Opaque to callers: store ``text`` and parse it back with
/// ``init(text:)`` to resume (a send interrupted by a restart, say).
public struct AudienceCursor: Sendable, Hashable {
    /// The last user read (user audiences are read user by user).
    var userID: String?
    /// The last token read.
    var token: String

    /// The cursor as text: the token, or for user audiences `u.<user id as hex>.<token>`.
    public var text: String {
        guard let userID else { return token }
        return "u." + userID.utf8.map { String(format: "%02x", $0) }.joined() + "." + token
    }

    /// Parses ``text``; `nil` when it is not a cursor this type made.
    public init?(text: String) {
        if text.hasPrefix("u.") {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3, let bytes = Self.bytes(hex: parts[1]), !parts[2].isEmpty else { return nil }
            userID = String(decoding: bytes, as: UTF8.self)
            token = String(parts[2])
        } else {
            guard !text.isEmpty, !text.contains(".") else { return nil }
            userID = nil
            token = text
        }
    }

    init(userID: String?, token: String) {
        self.userID = userID
        self.token = token
    }

    private static func bytes(hex: Substring) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(byte)
            index += 2
        }
        return bytes
    }
}

/// One page of an audience's tokens.
public struct AudiencePage: Sendable, Hashable {
    /// Active device tokens, at most the page's limit.
    public var tokens: [String]
    /// Where the next page starts; `nil` when this was the last.
    public var next: AudienceCursor?
}

extension DeviceStore {
    /// Users looked up per statement of a user audience.
    static let usersPerStatement = 500

    /// One page of the active devices' tokens an audience selects, after `cursor`, without ever
    /// loading the whole audience: each statement reads at most `limit + 1` rows in an index's
    /// order (tokens for `all` and tags; user, then token, for users).
    ///
    /// A device registered or invalidated while the pages are read is seen by the pages not yet
    /// read; no token is returned twice.
    ///
    /// - Parameter limit: tokens per page, 1 or more.
    public func activeTokens(
        app: String,
        environment: APNSEnvironment,
        selector: AudienceSelector,
        after cursor: AudienceCursor?,
        limit: Int
    ) async throws -> AudiencePage {
        let limit = max(1, limit)
        switch selector {
        case .all:
            let (sql, binds) = Self.allPageQuery(app: app, environment: environment, after: cursor, limit: limit)
            return page(try await database.query(sql, binds).map { try $0.string("token") }, limit: limit)
        case .anyTag(let tags):
            let unique = Array(Set(tags)).sorted()
            guard !unique.isEmpty else { return AudiencePage(tokens: [], next: nil) }
            var binds = SQLBinds()
            let sql = anyTagSQL(app: app, environment: environment, tags: unique, after: cursor, limit: limit, &binds)
            return page(try await database.query(sql, binds.values).map { try $0.string("token") }, limit: limit)
        case .allTags(let tags):
            let unique = Array(Set(tags)).sorted()
            guard !unique.isEmpty else { return AudiencePage(tokens: [], next: nil) }
            return try await allTagsTokens(
                app: app,
                environment: environment,
                tags: unique,
                after: cursor,
                limit: limit
            )
        case .users(let users):
            return try await userTokens(app: app, environment: environment, users: users, after: cursor, limit: limit)
        }
    }

    /// The `all` audience's page: `limit + 1` active tokens after the cursor, in token order, read
    /// from the `devices_active` index (migration 21), whose predicate and key this query matches.
    package static func allPageQuery(
        app: String,
        environment: APNSEnvironment,
        after cursor: AudienceCursor?,
        limit: Int
    ) -> (sql: String, binds: [SQLValue]) {
        var binds = SQLBinds()
        var sql = """
            SELECT token FROM devices WHERE app = \(binds.add(.text(app))) \
            AND environment = \(binds.add(.text(environment.rawValue))) AND status = 'active'
            """
        if let cursor { sql += " AND token > \(binds.add(.text(cursor.token)))" }
        sql += " ORDER BY token LIMIT \(binds.add(SQLValue(limit + 1)))"
        return (sql, binds.values)
    }

    private func page(_ tokens: [String], limit: Int) -> AudiencePage {
        guard tokens.count > limit else { return AudiencePage(tokens: tokens, next: nil) }
        let kept = Array(tokens.prefix(limit))
        return AudiencePage(tokens: kept, next: AudienceCursor(userID: nil, token: kept[limit - 1]))
    }

    /// Active devices with `tag`, in token order after the cursor: one range of the
    /// `device_tags` key, read without touching `devices`.
    private func tagSQL(
        app: String,
        environment: APNSEnvironment,
        tag: String,
        after cursor: AudienceCursor?,
        extra: String = "",
        limit: Int,
        _ binds: inout SQLBinds
    ) -> String {
        var sql = """
            SELECT t.token AS token FROM device_tags t
            WHERE t.app = \(binds.add(.text(app))) AND t.environment = \(binds.add(.text(environment.rawValue)))
                AND t.tag = \(binds.add(.text(tag))) AND t.active = 1
            """
        if let cursor { sql += " AND t.token > \(binds.add(.text(cursor.token)))" }
        sql += extra
        return sql + " ORDER BY t.token LIMIT \(binds.add(SQLValue(limit + 1)))"
    }

    /// Any of `tags`: the union of one bounded read per tag, each in token order.
    private func anyTagSQL(
        app: String,
        environment: APNSEnvironment,
        tags: [String],
        after cursor: AudienceCursor?,
        limit: Int,
        _ binds: inout SQLBinds
    ) -> String {
        if tags.count == 1 {
            return tagSQL(app: app, environment: environment, tag: tags[0], after: cursor, limit: limit, &binds)
        }
        let parts = tags.enumerated().map { index, tag in
            let inner = tagSQL(app: app, environment: environment, tag: tag, after: cursor, limit: limit, &binds)
            return "SELECT token FROM (\(inner)) AS tag\(index)"
        }
        return "SELECT token FROM (\(parts.joined(separator: " UNION "))) AS tagged ORDER BY token "
            + "LIMIT \(binds.add(SQLValue(limit + 1)))"
    }

    /// All of `tags`: the first tag's active devices in token order, `limit + 1` at a time, each
    /// checked for the other tags by key lookups in the select list, until the page is full or
    /// the first tag is read to its end. `OFFSET 0` keeps PostgreSQL from hashing a whole large
    /// tag for the check instead of looking each candidate up.
    private func allTagsTokens(
        app: String,
        environment: APNSEnvironment,
        tags: [String],
        after cursor: AudienceCursor?,
        limit: Int
    ) async throws -> AudiencePage {
        var matched: [String] = []
        var scanned = cursor
        while true {
            var binds = SQLBinds()
            let appBind = binds.add(.text(app))
            let environmentBind = binds.add(.text(environment.rawValue))
            let checks = tags.dropFirst().map { tag in
                "EXISTS (SELECT 1 FROM device_tags x WHERE x.app = \(appBind) AND x.environment = \(environmentBind) "
                    + "AND x.tag = \(binds.add(.text(tag))) AND x.active = 1 AND x.token = c.token LIMIT 1 OFFSET 0)"
            }
            var candidates = """
                SELECT t.token AS token FROM device_tags t
                WHERE t.app = \(appBind) AND t.environment = \(environmentBind) AND t.tag = \(binds.add(.text(tags[0])))
                    AND t.active = 1
                """
            if let scanned { candidates += " AND t.token > \(binds.add(.text(scanned.token)))" }
            candidates += " ORDER BY t.token LIMIT \(binds.add(SQLValue(limit + 1)))"
            let matches = checks.isEmpty ? "1" : "CASE WHEN \(checks.joined(separator: " AND ")) THEN 1 ELSE 0 END"
            let rows = try await database.query(
                "SELECT c.token AS token, \(matches) AS matched FROM (\(candidates)) AS c ORDER BY c.token",
                binds.values
            )
            for row in rows {
                let token = try row.string("token")
                if try row.int("matched") == 1 {
                    matched.append(token)
                    if matched.count > limit { return page(matched, limit: limit) }
                }
                scanned = AudienceCursor(userID: nil, token: token)
            }
            if rows.count <= limit { return AudiencePage(tokens: matched, next: nil) }
        }
    }

    /// Users in byte order, a statement per group of users; within a group, rows in (user,
    /// token) byte order (`COLLATE "C"` on PostgreSQL, SQLite's default), so that the cursor's
    /// user is where the next page resumes.
    private func userTokens(
        app: String,
        environment: APNSEnvironment,
        users: [String],
        after cursor: AudienceCursor?,
        limit: Int
    ) async throws -> AudiencePage {
        let sorted = Array(Set(users)).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let bytewise = database.dialect == .postgres ? " COLLATE \"C\"" : ""
        var found: [(user: String, token: String)] = []
        var index = 0
        if let cursor, let user = cursor.userID {
            index = sorted.firstIndex { !$0.utf8.lexicographicallyPrecedes(user.utf8) } ?? sorted.count
            if index < sorted.count, sorted[index] == user {
                // The rest of the cursor's user first.
                let rows = try await database.query(
                    """
                    SELECT token FROM devices WHERE app = $1 AND environment = $2 AND status = 'active'
                        AND user_id = $3 AND token > $4 ORDER BY token LIMIT $5
                    """,
                    [.text(app), .text(environment.rawValue), .text(user), .text(cursor.token), SQLValue(limit + 1)]
                )
                found += try rows.map { (user, try $0.string("token")) }
                index += 1
            }
        }
        while found.count <= limit, index < sorted.count {
            let group = sorted[index..<min(index + Self.usersPerStatement, sorted.count)]
            index += group.count
            var binds = SQLBinds()
            let app = binds.add(.text(app))
            let environment = binds.add(.text(environment.rawValue))
            let list = group.map { binds.add(.text($0)) }.joined(separator: ", ")
            let rows = try await database.query(
                """
                SELECT user_id, token FROM devices WHERE app = \(app) AND environment = \(environment)
                    AND status = 'active' AND user_id IN (\(list))
                ORDER BY user_id\(bytewise), token LIMIT \(binds.add(SQLValue(limit + 1 - found.count)))
                """,
                binds.values
            )
            found += try rows.map { (try $0.string("user_id"), try $0.string("token")) }
        }
        guard found.count > limit else { return AudiencePage(tokens: found.map(\.token), next: nil) }
        let kept = found.prefix(limit)
        let last = kept[kept.index(before: kept.endIndex)]
        return AudiencePage(tokens: kept.map(\.token), next: AudienceCursor(userID: last.user, token: last.token))
    }
}

extension DeviceStore {
    /// Which of `tokens` the registry holds as invalid for the app and environment: a fixed token
    /// list (a recurring send's `tokens` audience) leaves them out, as the registry's audiences do.
    public func invalidTokens(
        app: String,
        environment: APNSEnvironment,
        among tokens: [String]
    ) async throws -> Set<
        String
    > {
        var invalid: Set<String> = []
        for start in stride(from: 0, to: tokens.count, by: 500) {
            var binds = SQLBinds()
            _ = binds.add(.text(app))
            _ = binds.add(.text(environment.rawValue))
            let list = tokens[start..<min(start + 500, tokens.count)].map { binds.add(.text($0)) }
            let rows = try await database.query(
                "SELECT token FROM devices WHERE app = $1 AND environment = $2 AND status = 'invalid' "
                    + "AND token IN (\(list.joined(separator: ", ")))",
                binds.values
            )
            for row in rows { invalid.insert(try row.string("token")) }
        }
        return invalid
    }
}
