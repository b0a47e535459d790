public import Storage

/// The console's table, numbered in this module (``Storage/Migration``); never change one that
/// has shipped.
///
/// 1: `admin_sessions`: one row per signed-in browser. The cookie's token is stored only as its
/// SHA-256 (`id`), the key as its SHA-256 (`key_digest`, so that a key removed from the settings
/// ends its sessions); `csrf` is the token every form of the session carries. Kept in the
/// database so that every instance behind a load balancer knows every session.
public enum AdminMigrations {
    public static let all: [Migration] = [
        Migration(
            module: "Admin",
            number: 1,
            name: "create_admin_sessions",
            sql: """
                CREATE TABLE admin_sessions (
                    id TEXT PRIMARY KEY,
                    key_digest TEXT NOT NULL,
                    role TEXT NOT NULL,
                    csrf TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL
                );
                CREATE INDEX admin_sessions_expiry ON admin_sessions (expires_at);
                """
        )
    ]
}
