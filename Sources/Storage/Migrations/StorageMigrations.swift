/// The tables Storage itself defines: `kv_settings`, instance-wide settings as key-value pairs.
///
/// Each module that owns tables numbers its own migrations from 1 (``Migration``; HeraldAPI's
/// `HeraldSchema` composes the lists the executable migrates with): a new migration takes its
/// module's next number. Never change one that has shipped.
///
/// Conventions: times are `BIGINT` milliseconds since 1970, ids are `TEXT` UUIDs (lowercase),
/// booleans are `BOOLEAN` on PostgreSQL and `INTEGER` 0/1 on SQLite (both read as 0/1).
public enum StorageMigrations {
    public static let all: [Migration] = [
        Migration(
            module: "Storage",
            number: 1,
            name: "create_kv_settings",
            releasedAs: 1,
            sql: """
                CREATE TABLE kv_settings (
                    key TEXT PRIMARY KEY,
                    value TEXT NOT NULL,
                    updated_at BIGINT NOT NULL
                );
                """
        )
    ]
}
