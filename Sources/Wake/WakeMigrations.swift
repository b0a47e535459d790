public import Storage

/// The wake schedules (`wake_schedules`, `Wake 1`), their run history (`wake_runs`) and the
/// last wake ping per device (`wake_pings`, both `Wake 2`). Numbered in this module
/// (``Storage/Migration``); never change one that has shipped.
///
/// A schedule's occurrences are one-shot `wake.run` jobs chained by the runner; the row's
/// `generation` and `next_run_at` say which job is current, so that a job made stale by a PATCH
/// or a DELETE ends without running.
public enum WakeMigrations {
    public static let all: [Migration] = [
        Migration(
            module: "Wake",
            number: 1,
            name: "create_wake_schedules",
            releasedAs: 13,
            sql: """
                CREATE TABLE wake_schedules (
                    id TEXT PRIMARY KEY,
                    name TEXT NOT NULL,
                    mode TEXT NOT NULL,
                    schedule TEXT NOT NULL,
                    jitter_seconds BIGINT NOT NULL,
                    app TEXT,
                    environment TEXT,
                    audience TEXT,
                    data TEXT,
                    cloudkit TEXT,
                    paused BIGINT NOT NULL,
                    generation BIGINT NOT NULL,
                    next_run_at BIGINT,
                    last_run_at BIGINT,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL
                );
                CREATE INDEX wake_schedules_created ON wake_schedules (created_at, id);
                """
        ),
        Migration(
            module: "Wake",
            number: 2,
            name: "create_wake_runs_and_pings",
            releasedAs: 14,
            sql: """
                CREATE TABLE wake_runs (
                    schedule_id TEXT NOT NULL REFERENCES wake_schedules (id) ON DELETE CASCADE,
                    occurrence_at BIGINT NOT NULL,
                    mode TEXT NOT NULL,
                    status TEXT NOT NULL,
                    started_at BIGINT NOT NULL,
                    finished_at BIGINT,
                    devices BIGINT NOT NULL DEFAULT 0,
                    sent BIGINT NOT NULL DEFAULT 0,
                    skipped BIGINT NOT NULL DEFAULT 0,
                    failed BIGINT NOT NULL DEFAULT 0,
                    record_name TEXT,
                    error_codes TEXT NOT NULL DEFAULT '[]',
                    error TEXT,
                    PRIMARY KEY (schedule_id, occurrence_at)
                );
                CREATE TABLE wake_pings (
                    app TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    token TEXT NOT NULL,
                    last_at BIGINT NOT NULL,
                    PRIMARY KEY (app, environment, token)
                );
                CREATE INDEX wake_pings_last ON wake_pings (last_at);
                """
        ),
    ]
}
