import Foundation
import HeraldCore
import HeraldCrypto
import Storage

/// A signed-in browser.
struct AdminSession: Sendable, Hashable {
    /// SHA-256 of the cookie's token, hex.
    var id: String
    var keyDigest: [UInt8]
    var role: AdminRole
    /// What every form of the session carries; compared in constant time.
    var csrf: String
    var expiresAt: Date
}

/// The sessions in `admin_sessions`: made at sign-in, read on every page, deleted at sign-out and
/// once expired (hourly, ``deleteExpired(now:)``).
struct AdminSessionStore: Sendable {
    let database: any Database

    /// Makes a session for `keyDigest` lasting `ttl`; answers the cookie's token (the only place
    /// it exists in clear) and the session.
    func create(
        keyDigest: [UInt8],
        role: AdminRole,
        now: Date,
        ttl: TimeInterval
    ) async throws -> (
        token: String, session: AdminSession
    ) {
        let token = Hex.encode(SecureRandom.bytes(32))
        let session = AdminSession(
            id: Self.digest(token),
            keyDigest: keyDigest,
            role: role,
            csrf: Hex.encode(SecureRandom.bytes(24)),
            expiresAt: now.addingTimeInterval(ttl)
        )
        _ = try await database.execute(
            """
            INSERT INTO admin_sessions (id, key_digest, role, csrf, created_at, expires_at)
            VALUES ($1, $2, $3, $4, $5, $6)
            """,
            [
                .text(session.id), .text(Hex.encode(keyDigest)), .text(role.rawValue), .text(session.csrf),
                SQLValue(now), SQLValue(session.expiresAt),
            ]
        )
        return (token, session)
    }

    /// The live session whose cookie token is `token`, or `nil`.
    func find(token: String, now: Date) async throws -> AdminSession? {
        guard token.utf8.count == 64, Hex.isLowercaseHex(token) else { return nil }
        guard
            let row = try await database.queryFirst(
                "SELECT id, key_digest, role, csrf, expires_at FROM admin_sessions WHERE id = $1 AND expires_at > $2",
                [.text(Self.digest(token)), SQLValue(now)]
            ),
            let role = AdminRole(rawValue: try row.string("role")),
            let keyDigest = Hex.decode(try row.string("key_digest"))
        else { return nil }
        return AdminSession(
            id: try row.string("id"),
            keyDigest: keyDigest,
            role: role,
            csrf: try row.string("csrf"),
            expiresAt: try row.date("expires_at")
        )
    }

    func delete(id: String) async throws {
        _ = try await database.execute("DELETE FROM admin_sessions WHERE id = $1", [.text(id)])
    }

    @discardableResult
    func deleteExpired(now: Date) async throws -> Int {
        try await database.execute("DELETE FROM admin_sessions WHERE expires_at <= $1", [SQLValue(now)])
    }

    static func digest(_ token: String) -> String {
        Hex.encode(SHA256.hash(Array(token.utf8)))
    }
}
