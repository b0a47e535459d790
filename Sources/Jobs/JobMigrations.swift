public import Storage

/// The `jobs` table the queue keeps its jobs in. Numbered in this module
/// (``Storage/Migration``); never change one that has shipped.
public enum JobMigrations {
    public static let all: [Migration] = [
        Migration(
            module: "Jobs",
            number: 1,
            name: "create_jobs",
            releasedAs: 2,
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
        // The jobs an operator looks at (the console's Jobs page, `herald jobs list --status`),
        // newest first, without walking the pending and done jobs created since: with 100,000
        // notifications scheduled, the dead jobs' page read every one of them (50-70 ms). Only
        // these rare rows are in it, and no claim can use it (its WHERE is not a claim's).
        Migration(
            module: "Jobs",
            number: 2,
            name: "jobs_attention",
            sql: """
                CREATE INDEX jobs_attention ON jobs (created_at) WHERE status IN ('failed', 'dead', 'cancelled');
                """
        ),
    ]
}
