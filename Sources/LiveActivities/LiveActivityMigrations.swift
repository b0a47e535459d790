public import Storage

/// The Live Activities tables, numbered in this module (``Storage/Migration``); never change one
/// that has shipped.
///
/// 1: `push_to_start_tokens` (one row per (app, environment, attributes type, token),
/// with the dead-token columns of `devices`), `live_activities` (one row per activity Herald
/// started or will start), `live_activity_users` (the users an activity was started for, so a
/// client token's `sub` can be checked and activities listed by user) and
/// `live_activity_instances` (where an activity runs: one row per iOS `activity.id`).
/// 2: `live_activity_deliveries`, every push Herald sent for an activity and APNs' answer.
/// 3: `live_activity_instances.registered_after`, the activity's latest timestamp when the
/// instance was first reported: an update stamped at or before it reaches the instance by the
/// catch-up job its report enqueued, not by the update's own job, so it is not sent twice.
/// 5: only a user of an activity may report its instances, and the start job now records
/// as users the owners of the push-to-start tokens it sends to (for every audience, `tokens`
/// too). Activities started before it: their users are backfilled the same way from the
/// push-to-starts they recorded as sent (`live_activity_deliveries`), so a device that received
/// one can still report its instance; their `users` audiences were recorded at creation already.
/// 6: an index on each user's push-to-start tokens per app and environment, for the
/// eviction past `HERALD_CLIENT_MAX_DEVICES`.
public enum LiveActivityMigrations {
    public static let all: [Migration] = [
        Migration(
            module: "LiveActivities",
            number: 1,
            name: "create_live_activities",
            releasedAs: 11,
            sql: """
                CREATE TABLE push_to_start_tokens (
                    app TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    attributes_type TEXT NOT NULL,
                    token TEXT NOT NULL,
                    user_id TEXT,
                    status TEXT NOT NULL,
                    invalid_reason TEXT,
                    invalid_at BIGINT,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL,
                    last_registered_at BIGINT,
                    PRIMARY KEY (app, environment, attributes_type, token)
                );
                CREATE INDEX push_to_start_tokens_user ON push_to_start_tokens
                    (app, environment, attributes_type, user_id, token);
                CREATE TABLE live_activities (
                    id TEXT PRIMARY KEY,
                    app TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    attributes_type TEXT NOT NULL,
                    request TEXT NOT NULL,
                    request_hash TEXT NOT NULL,
                    state TEXT NOT NULL,
                    failure_reason TEXT,
                    channel_id TEXT,
                    channel_created BIGINT NOT NULL,
                    content_state TEXT NOT NULL,
                    last_update TEXT,
                    last_timestamp BIGINT NOT NULL,
                    start_at BIGINT,
                    end_at BIGINT,
                    started_at BIGINT,
                    ended_at BIGINT,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL
                );
                CREATE INDEX live_activities_created ON live_activities (created_at, id);
                CREATE TABLE live_activity_users (
                    user_id TEXT NOT NULL,
                    live_activity_id TEXT NOT NULL,
                    PRIMARY KEY (user_id, live_activity_id)
                );
                CREATE INDEX live_activity_users_activity ON live_activity_users (live_activity_id);
                CREATE TABLE live_activity_instances (
                    live_activity_id TEXT NOT NULL,
                    activity_id TEXT NOT NULL,
                    user_id TEXT,
                    device_token TEXT,
                    update_token TEXT,
                    state TEXT NOT NULL,
                    unreachable BIGINT NOT NULL,
                    last_timestamp BIGINT NOT NULL DEFAULT 0,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL,
                    PRIMARY KEY (live_activity_id, activity_id)
                );
                """
        ),
        Migration(
            module: "LiveActivities",
            number: 2,
            name: "create_live_activity_deliveries",
            releasedAs: 12,
            sql: """
                CREATE TABLE live_activity_deliveries (
                    live_activity_id TEXT NOT NULL,
                    at BIGINT NOT NULL,
                    id TEXT NOT NULL,
                    event TEXT NOT NULL,
                    route TEXT NOT NULL,
                    token TEXT,
                    status BIGINT,
                    reason TEXT,
                    apns_id TEXT,
                    PRIMARY KEY (live_activity_id, at, id)
                );
                """
        ),
        Migration(
            module: "LiveActivities",
            number: 3,
            name: "live_activity_instances_registered_after",
            releasedAs: 16,
            sql: "ALTER TABLE live_activity_instances ADD COLUMN registered_after BIGINT NOT NULL DEFAULT 0;"
        ),
        // 1 while the start job sends the push-to-starts of a scheduled activity: it can no longer
        // be cancelled (devices may be showing it already).
        Migration(
            module: "LiveActivities",
            number: 4,
            name: "live_activities_starting",
            releasedAs: 17,
            sql: "ALTER TABLE live_activities ADD COLUMN starting BIGINT NOT NULL DEFAULT 0;"
        ),
        Migration(
            module: "LiveActivities",
            number: 5,
            name: "live_activity_users_from_push_to_start",
            releasedAs: 18,
            sql: """
                INSERT INTO live_activity_users (user_id, live_activity_id)
                SELECT DISTINCT t.user_id, d.live_activity_id
                FROM live_activity_deliveries d
                JOIN live_activities a ON a.id = d.live_activity_id
                JOIN push_to_start_tokens t ON t.app = a.app AND t.environment = a.environment
                    AND t.attributes_type = a.attributes_type AND t.token = d.token
                WHERE d.route = 'push_to_start' AND t.user_id IS NOT NULL
                ON CONFLICT DO NOTHING;
                """
        ),
        Migration(
            module: "LiveActivities",
            number: 6,
            name: "push_to_start_tokens_user_registered",
            releasedAs: 19,
            sql: """
                CREATE INDEX push_to_start_tokens_user_registered ON push_to_start_tokens
                    (app, environment, user_id, status, last_registered_at);
                """
        ),
        // The hourly pruning reads the finished activities oldest first (LiveActivityRetention).
        Migration(
            module: "LiveActivities",
            number: 7,
            name: "live_activities_finished",
            sql: """
                CREATE INDEX live_activities_finished ON live_activities (updated_at, id)
                    WHERE state IN ('ended', 'cancelled', 'failed', 'expired');
                """
        ),
        // The storage policy of the channel Herald created (1: the latest message stored), which
        // decides the apns-expiration its broadcasts may carry; 0 for none or an existing channel.
        Migration(
            module: "LiveActivities",
            number: 8,
            name: "live_activities_channel_storage_policy",
            sql: "ALTER TABLE live_activities ADD COLUMN channel_storage_policy BIGINT NOT NULL DEFAULT 0;"
        ),
    ]
}
