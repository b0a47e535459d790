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
        ),
        Migration(
            version: 2,
            name: "create_jobs",
            sql: """
                CREATE TABLE jobs (
                    id TEXT PRIMARY KEY,
                    kind TEXT NOT NULL,
                    payload TEXT NOT NULL,
                    status TEXT NOT NULL,
                    due_at BIGINT NOT NULL,
                    attempts BIGINT NOT NULL,
                    max_attempts BIGINT NOT NULL,
                    last_error TEXT,
                    lease_owner TEXT,
                    lease_expires_at BIGINT,
                    unique_key TEXT,
                    schedule TEXT,
                    missed_runs TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL,
                    started_at BIGINT,
                    finished_at BIGINT
                );
                CREATE INDEX jobs_pending_due ON jobs (due_at) WHERE status = 'pending';
                CREATE INDEX jobs_running_lease ON jobs (lease_expires_at) WHERE status = 'running';
                CREATE INDEX jobs_finished ON jobs (finished_at)
                    WHERE status IN ('done', 'failed', 'cancelled', 'dead');
                CREATE UNIQUE INDEX jobs_active_unique_key ON jobs (unique_key)
                    WHERE unique_key IS NOT NULL AND status IN ('pending', 'running');
                CREATE INDEX jobs_status_created ON jobs (status, created_at);
                """
        ),
    ]
}
