import Storage

/// The single migration list every database created before the modules owned their tables
/// recorded (`HeraldMigrations.all` in Storage until then), copied verbatim and frozen: the
/// composed list must hold it, released as those versions with those names and SQL, so those
/// databases upgrade unchanged. Never edit it.
enum LegacySchema {
    static let migrations: [LegacyMigration] = [
        LegacyMigration(
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
        LegacyMigration(
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
                -- Listing (herald jobs list) reads newest first. Deliberately not (status, ...):
                -- SQLite, without statistics, would prefer such an index to the partial ones above
                -- for `status = 'pending'` and scan every pending job on each claim.
                CREATE INDEX jobs_created ON jobs (created_at);
                """
        ),
        LegacyMigration(
            version: 3,
            name: "create_notifications",
            sql: """
                CREATE TABLE notifications (
                    id TEXT PRIMARY KEY,
                    app TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    push_type TEXT NOT NULL,
                    topic TEXT NOT NULL,
                    priority BIGINT,
                    expiration BIGINT,
                    collapse_id TEXT,
                    payload TEXT NOT NULL,
                    send_at BIGINT NOT NULL,
                    status TEXT NOT NULL,
                    token_count BIGINT NOT NULL,
                    failure_reason TEXT,
                    job_id TEXT,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL
                );
                CREATE INDEX notifications_status_send_at ON notifications (status, send_at);
                CREATE TABLE notification_deliveries (
                    notification_id TEXT NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
                    token TEXT NOT NULL,
                    ordinal BIGINT NOT NULL,
                    status TEXT NOT NULL,
                    reason TEXT,
                    apns_id TEXT,
                    invalid_at BIGINT,
                    attempts BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL,
                    PRIMARY KEY (notification_id, token)
                );
                CREATE UNIQUE INDEX notification_deliveries_ordinal ON notification_deliveries (notification_id, ordinal);
                CREATE INDEX notification_deliveries_status ON notification_deliveries (notification_id, status);
                CREATE TABLE dead_tokens (
                    app TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    token TEXT NOT NULL,
                    reason TEXT NOT NULL,
                    invalid_at BIGINT,
                    recorded_at BIGINT NOT NULL,
                    notification_id TEXT,
                    PRIMARY KEY (app, environment, token)
                );
                CREATE INDEX dead_tokens_recorded ON dead_tokens (recorded_at, app, environment, token);
                """
        ),
        LegacyMigration(
            version: 4,
            name: "notification_send_owner",
            sql: """
                ALTER TABLE notifications ADD COLUMN send_owner TEXT;
                ALTER TABLE notifications ADD COLUMN send_lease_expires_at BIGINT;
                """
        ),
        LegacyMigration(
            version: 5,
            name: "create_idempotency_keys",
            sql: """
                CREATE TABLE idempotency_keys (
                    api_key_hash TEXT NOT NULL,
                    idempotency_key TEXT NOT NULL,
                    request_hash TEXT NOT NULL,
                    status_code BIGINT,
                    response_headers TEXT,
                    response_body TEXT,
                    created_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    PRIMARY KEY (api_key_hash, idempotency_key)
                );
                CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);
                """
        ),
    ]
}

/// A migration of the one global sequence, as releases before modules numbered their own
/// declared it.
struct LegacyMigration {
    var version: Int
    var name: String
    var sqlite: String
    var postgres: String

    init(version: Int, name: String, sql: String) {
        self.init(version: version, name: name, sqlite: sql, postgres: sql)
    }

    init(version: Int, name: String, sqlite: String, postgres: String) {
        self.version = version
        self.name = name
        self.sqlite = sqlite
        self.postgres = postgres
    }
}

extension LegacySchema {
    /// Migrates `db` as those releases did: each migration's SQL, recorded in
    /// `schema_migrations(version, name, applied_at)`.
    static func apply(_ migrations: [LegacyMigration], to db: any Database) async throws {
        try await db.transaction { transaction in
            try await transaction.execute(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version BIGINT PRIMARY KEY,
                    name TEXT NOT NULL,
                    applied_at BIGINT NOT NULL
                )
                """,
                []
            )
            for (index, migration) in migrations.enumerated() {
                try await transaction.executeScript(
                    transaction.dialect == .sqlite ? migration.sqlite : migration.postgres
                )
                try await transaction.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
                    [
                        .integer(Int64(migration.version)), .text(migration.name),
                        .integer(1_700_000_000_000 + Int64(index)),
                    ]
                )
            }
        }
    }
}
