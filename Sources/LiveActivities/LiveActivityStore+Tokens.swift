public import APNs
public import Foundation
import HeraldCore
import Storage

/// A push-to-start token of a user, as the app reported it from `pushToStartTokenUpdates`.
public struct PushToStartRegistration: Sendable, Hashable {
    public var app: String
    public var environment: APNSEnvironment
    public var attributesType: String
    public var token: String
    public var userID: String
    /// The request time on the server's clock: what the dead-token rule compares with.
    public var registeredAt: Date

    public init(
        app: String,
        environment: APNSEnvironment,
        attributesType: String,
        token: String,
        userID: String,
        registeredAt: Date
    ) {
        self.app = app
        self.environment = environment
        self.attributesType = attributesType
        self.token = token
        self.userID = userID
        self.registeredAt = registeredAt
    }
}

/// A push-to-start token as stored.
public struct PushToStartToken: Sendable, Hashable {
    public var token: String
    public var userID: String?
    /// `active`, or `invalid` once APNs called it dead after its last registration.
    public var status: String
    public var invalidReason: String?
}

extension LiveActivityStore {
    /// Registers a push-to-start token (creates or replaces its user). The dead-token rule of
    /// devices: a token APNs called dead at T becomes active again only from a registration
    /// stamped after T (an evicted token, not dead, becomes active again at once).
    ///
    /// The user then holds at most `maximumPerUser` active push-to-start tokens in the app and
    /// environment (all attributes types together): the least recently registered others become
    /// `invalid` with `invalid_reason` `evicted` (the `maximumPerUser` latest evicted are kept,
    /// older ones deleted). Registrations of one user are serialised (the
    /// SQLite write lock; on PostgreSQL a transaction advisory lock on the user), so two at once
    /// cannot leave one token too many.
    ///
    /// - Returns: the token as stored, and whether it is new to this user (a token that was
    ///   another user's counts as new: the answer does not tell whether anyone had it).
    public func register(
        _ registration: PushToStartRegistration,
        maximumPerUser: Int = LiveActivityQuotas().maximumPushToStartTokensPerUser
    ) async throws -> (PushToStartToken, created: Bool) {
        try await database.transaction { tx in
            let key: [SQLValue] = [
                .text(registration.app), .text(registration.environment.rawValue), .text(registration.attributesType),
                .text(registration.token),
            ]
            if tx.dialect == .postgres {
                try await tx.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                    [
                        .text(
                            "herald.push_to_start_tokens\n\(registration.app)\n\(registration.environment.rawValue)\n"
                                + registration.userID
                        )
                    ]
                )
            }
            let previous = try await tx.queryFirst(
                "SELECT user_id FROM push_to_start_tokens WHERE app = $1 AND environment = $2 "
                    + "AND attributes_type = $3 AND token = $4",
                key
            )
            let existed = try previous.map { try $0.optionalString("user_id") == registration.userID } ?? false
            let stale =
                "push_to_start_tokens.status = 'invalid' AND COALESCE(push_to_start_tokens.invalid_reason, '') "
                + "<> 'evicted' AND push_to_start_tokens.invalid_at >= $6"
            let rows = try await tx.query(
                """
                INSERT INTO push_to_start_tokens (app, environment, attributes_type, token, user_id, status,
                    created_at, updated_at, last_registered_at)
                VALUES ($1, $2, $3, $4, $5, 'active', $6, $6, $6)
                ON CONFLICT (app, environment, attributes_type, token) DO UPDATE SET user_id = excluded.user_id,
                    status = CASE WHEN \(stale) THEN 'invalid' ELSE 'active' END,
                    invalid_reason = CASE WHEN \(stale) THEN push_to_start_tokens.invalid_reason ELSE NULL END,
                    invalid_at = CASE WHEN \(stale) THEN push_to_start_tokens.invalid_at ELSE NULL END,
                    updated_at = excluded.updated_at, last_registered_at = excluded.last_registered_at
                RETURNING token, user_id, status, invalid_reason
                """,
                key + [.text(registration.userID), SQLValue(registration.registeredAt)]
            )
            guard let row = rows.first else { throw LiveActivityError.notFound }
            let token = PushToStartToken(
                token: try row.string("token"),
                userID: try row.optionalString("user_id"),
                status: try row.string("status"),
                invalidReason: try row.optionalString("invalid_reason")
            )
            try await self.evictPushToStart(beyond: maximumPerUser, keeping: registration, on: tx)
            return (token, !existed)
        }
    }

    /// Marks `evicted` the user's active push-to-start tokens in the app and environment past the
    /// `limit` most recently registered, the one just registered always kept; then forgets the
    /// user's evicted tokens past the `limit` most recently evicted, so that no user's rows grow
    /// without bound however many tokens they register.
    private func evictPushToStart(
        beyond limit: Int,
        keeping registration: PushToStartRegistration,
        on tx: any DatabaseExecutor
    ) async throws {
        let mine = "app = $1 AND environment = $2 AND user_id = $3 AND status = 'active'"
        let other = "NOT (attributes_type = $4 AND token = $5)"
        try await tx.execute(
            """
            UPDATE push_to_start_tokens SET status = 'invalid', invalid_reason = 'evicted', invalid_at = $6,
                updated_at = $6
            WHERE \(mine) AND \(other) AND (attributes_type, token) NOT IN (
                SELECT attributes_type, token FROM push_to_start_tokens WHERE \(mine) AND \(other)
                ORDER BY COALESCE(last_registered_at, 0) DESC, attributes_type DESC, token DESC LIMIT $7
            )
            """,
            [
                .text(registration.app), .text(registration.environment.rawValue), .text(registration.userID),
                .text(registration.attributesType), .text(registration.token), SQLValue(registration.registeredAt),
                .integer(Int64(max(0, limit - 1))),
            ]
        )
        let evicted =
            "app = $1 AND environment = $2 AND user_id = $3 AND status = 'invalid' AND invalid_reason = 'evicted'"
        try await tx.execute(
            """
            DELETE FROM push_to_start_tokens WHERE \(evicted) AND (attributes_type, token) NOT IN (
                SELECT attributes_type, token FROM push_to_start_tokens WHERE \(evicted)
                ORDER BY invalid_at DESC, attributes_type DESC, token DESC LIMIT $4
            )
            """,
            [
                .text(registration.app), .text(registration.environment.rawValue), .text(registration.userID),
                .integer(Int64(limit)),
            ]
        )
    }

    /// The active push-to-start tokens of `users` for the attributes type, with their users.
    public func pushToStartTokens(
        app: String,
        environment: APNSEnvironment,
        attributesType: String,
        users: [String]
    ) async throws -> [(token: String, userID: String)] {
        var result: [(String, String)] = []
        var start = 0
        while start < users.count {
            let chunk = users[start..<min(start + 500, users.count)]
            var binds: [SQLValue] = [.text(app), .text(environment.rawValue), .text(attributesType)]
            let list = chunk.map { user -> String in
                binds.append(.text(user))
                return "$\(binds.count)"
            }.joined(separator: ", ")
            let rows = try await database.query(
                """
                SELECT token, user_id FROM push_to_start_tokens
                WHERE app = $1 AND environment = $2 AND attributes_type = $3 AND status = 'active'
                    AND user_id IN (\(list))
                ORDER BY user_id, token
                """,
                binds
            )
            for row in rows { result.append((try row.string("token"), try row.string("user_id"))) }
            start += 500
        }
        return result
    }

    /// Of `tokens`, those not known dead, in the order given.
    public func livePushToStartTokens(
        app: String,
        environment: APNSEnvironment,
        attributesType: String,
        tokens: [String]
    ) async throws -> [String] {
        var dead = Set<String>()
        var start = 0
        while start < tokens.count {
            let chunk = tokens[start..<min(start + 500, tokens.count)]
            var binds: [SQLValue] = [.text(app), .text(environment.rawValue), .text(attributesType)]
            let list = chunk.map { token -> String in
                binds.append(.text(token))
                return "$\(binds.count)"
            }.joined(separator: ", ")
            for row in try await database.query(
                "SELECT token FROM push_to_start_tokens WHERE app = $1 AND environment = $2 AND attributes_type = $3 "
                    + "AND status = 'invalid' AND token IN (\(list))",
                binds
            ) {
                dead.insert(try row.string("token"))
            }
            start += 500
        }
        return tokens.filter { !dead.contains($0) }
    }

    /// Records APNs' answer that a push-to-start token is dead: invalid at `at` unless it
    /// registered after that (a token never registered is recorded invalid, so it is not tried again).
    public func invalidatePushToStart(
        app: String,
        environment: APNSEnvironment,
        attributesType: String,
        token: String,
        reason: String,
        at: Date,
        now: Date
    ) async throws {
        try await database.execute(
            """
            INSERT INTO push_to_start_tokens (app, environment, attributes_type, token, status, invalid_reason,
                invalid_at, created_at, updated_at)
            VALUES ($1, $2, $3, $4, 'invalid', $5, $6, $7, $7)
            ON CONFLICT (app, environment, attributes_type, token) DO UPDATE SET status = 'invalid',
                invalid_reason = excluded.invalid_reason, invalid_at = excluded.invalid_at,
                updated_at = excluded.updated_at
            WHERE push_to_start_tokens.last_registered_at IS NULL
                OR excluded.invalid_at >= push_to_start_tokens.last_registered_at
            """,
            [
                .text(app), .text(environment.rawValue), .text(attributesType), .text(token), .text(reason),
                SQLValue(at), SQLValue(now),
            ]
        )
    }
}
