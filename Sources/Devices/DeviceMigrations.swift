public import Storage

/// The device registry's tables, numbered in this module (``Storage/Migration``); never change one
/// that has shipped.
///
/// `devices` holds one row per (app, environment, token); `device_tags` one row per tag of a
/// device with the device's status copied in (`active` 1 or 0), keyed so that a tag audience is
/// one range of the key in token order, without a join. `Devices 1` also moves the dead-token
/// records of Notifications' `dead_tokens` (`Notifications 1`) into `devices` as invalid devices and drops
/// that table; it creates `dead_tokens` first when absent, so the registry's migrations also run
/// on a database without the notifications' (its own tests).
public enum DeviceMigrations {
    public static let all: [Migration] = [
        Migration(
            module: "Devices",
            number: 1,
            name: "create_devices",
            releasedAs: 7,
            sql: """
                CREATE TABLE devices (
                    app TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    token TEXT NOT NULL,
                    user_id TEXT,
                    tags TEXT NOT NULL,
                    locale TEXT,
                    timezone TEXT,
                    app_version TEXT,
                    platform TEXT,
                    status TEXT NOT NULL,
                    invalid_reason TEXT,
                    invalid_at BIGINT,
                    invalid_recorded_at BIGINT,
                    invalid_notification_id TEXT,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL,
                    last_registered_at BIGINT,
                    PRIMARY KEY (app, environment, token)
                );
                CREATE INDEX devices_status ON devices (app, environment, status, token);
                CREATE INDEX devices_user ON devices (app, environment, user_id, token);
                CREATE INDEX devices_invalid ON devices (invalid_recorded_at, app, environment, token)
                    WHERE status = 'invalid';
                CREATE TABLE device_tags (
                    app TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    tag TEXT NOT NULL,
                    active BIGINT NOT NULL,
                    token TEXT NOT NULL,
                    PRIMARY KEY (app, environment, tag, active, token)
                );
                CREATE INDEX device_tags_token ON device_tags (app, environment, token);
                CREATE TABLE IF NOT EXISTS dead_tokens (
                    app TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    token TEXT NOT NULL,
                    reason TEXT NOT NULL,
                    invalid_at BIGINT,
                    recorded_at BIGINT NOT NULL,
                    notification_id TEXT,
                    PRIMARY KEY (app, environment, token)
                );
                INSERT INTO devices (app, environment, token, tags, status, invalid_reason, invalid_at,
                    invalid_recorded_at, invalid_notification_id, created_at, updated_at)
                SELECT app, environment, token, '[]', 'invalid', reason, invalid_at, recorded_at, notification_id,
                    recorded_at, recorded_at
                FROM dead_tokens;
                DROP TABLE dead_tokens;
                """
        ),
        // The `all` audience's page query (``DeviceStore/allPageQuery(app:environment:after:limit:)``)
        // has this index to itself: its WHERE is the predicate and the key, its ORDER BY the rest of
        // the key. Its status test being the predicate costs nothing whatever the statistics say,
        // so PostgreSQL pages a freshly imported, not yet analyzed registry by it, where
        // `devices_status` or the primary key with a filter were picked by estimates.
        Migration(
            module: "Devices",
            number: 2,
            name: "devices_active",
            releasedAs: 21,
            sql: """
                CREATE INDEX devices_active ON devices (app, environment, token) WHERE status = 'active';
                """
        ),
        // `GET /v1/dead-tokens?app=&environment=` pages one app's dead tokens in the order they
        // were recorded. Without this index SQLite read and sorted every invalid device of the
        // app for each page (23 ms at 12,000); `devices_invalid` serves the list of every app.
        Migration(
            module: "Devices",
            number: 3,
            name: "devices_invalid_app",
            sql: """
                CREATE INDEX devices_invalid_app ON devices (app, environment, invalid_recorded_at, token)
                    WHERE status = 'invalid';
                """
        ),
    ]
}
