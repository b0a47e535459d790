/// The tables Storage itself defines: `kv_settings`, instance-wide settings as key-value pairs.
///
/// Migration versions are one sequence shared by every module that owns tables (HeraldAPI's
/// `HeraldSchema` composes the lists the executable migrates with): a new migration, in any
/// module, takes the next version not used by any module. Never change one that has shipped.
///
/// Conventions: times are `BIGINT` milliseconds since 1970, ids are `TEXT` UUIDs (lowercase),
/// booleans are `BOOLEAN` on PostgreSQL and `INTEGER` 0/1 on SQLite (both read as 0/1).
public enum StorageMigrations {
    public static let all: [Migration] = [
        Migration(
            version: 1,
            name: "create_kv_settings",
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
