/// Herald's own schema, in order. Append new migrations with the next version; never change one
/// that has shipped.
///
/// Conventions: times are `BIGINT` milliseconds since 1970, ids are `TEXT` UUIDs (lowercase),
/// booleans are `BOOLEAN` on PostgreSQL and `INTEGER` 0/1 on SQLite (both read as 0/1).
public enum HeraldMigrations {
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
