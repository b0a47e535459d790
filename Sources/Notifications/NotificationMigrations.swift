public import Storage

/// The notifications, their per-token results (`notification_deliveries`) and the tokens APNs
/// called dead (`dead_tokens`). Numbered in this module (``Storage/Migration``); never
/// change one that has shipped.
///
/// The `notifications` rows reference send jobs by id only, so these need ``Jobs/JobMigrations``
/// only at run time, not for their SQL.
public enum NotificationMigrations {
    public static let all: [Migration] = [
        Migration(
            module: "Notifications",
            number: 1,
            name: "create_notifications",
            releasedAs: 3,
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
        Migration(
            module: "Notifications",
            number: 2,
            name: "notification_send_owner",
            releasedAs: 4,
            sql: """
                ALTER TABLE notifications ADD COLUMN send_owner TEXT;
                ALTER TABLE notifications ADD COLUMN send_lease_expires_at BIGINT;
                """
        ),
        // GET /v1/notifications lists newest first, keyset-paged on (created_at, id), optionally
        // by status or app: one index per way in, each already in the listing's order.
        Migration(
            module: "Notifications",
            number: 3,
            name: "notifications_listing",
            releasedAs: 6,
            sql: """
                CREATE INDEX notifications_created ON notifications (created_at, id);
                CREATE INDEX notifications_status_created ON notifications (status, created_at, id);
                CREATE INDEX notifications_app_created ON notifications (app, created_at, id);
                """
        ),
        // Audiences resolved when the send runs (users, tags, all): the audience as given, and how
        // far the send has read the device registry (the last token, in token order) and when it
        // read the last page. Rows from before keep NULL kind: a tokens notification, resolved.
        Migration(
            module: "Notifications",
            number: 4,
            name: "notification_audiences",
            releasedAs: 8,
            sql: """
                ALTER TABLE notifications ADD COLUMN audience_kind TEXT;
                ALTER TABLE notifications ADD COLUMN audience TEXT;
                ALTER TABLE notifications ADD COLUMN audience_cursor TEXT;
                ALTER TABLE notifications ADD COLUMN audience_resolved_at BIGINT;
                """
        ),
        // An audience's resolved pages, one row each (first ordinal, count, tokens in order): a
        // device gets its `notification_deliveries` row with its first result instead of a
        // `pending` row that the result then updates, which halves the writes of a large send.
        Migration(
            module: "Notifications",
            number: 5,
            name: "notification_pages",
            releasedAs: 15,
            sql: """
                CREATE TABLE notification_pages (
                    notification_id TEXT NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
                    first_ordinal BIGINT NOT NULL,
                    token_count BIGINT NOT NULL,
                    tokens TEXT NOT NULL,
                    PRIMARY KEY (notification_id, first_ordinal)
                );
                """
        ),
        // Tokens per result on the notification's row, kept in the transaction that writes the
        // results (``NotificationStore/counts(id:)`` reads one row instead of counting a send's
        // rows). `pending_count` also holds the tokens of stored pages that have no row yet, so the
        // counts add up to `token_count`. Existing rows are counted once here.
        Migration(
            module: "Notifications",
            number: 6,
            name: "notification_counts",
            releasedAs: 20,
            sql: """
                ALTER TABLE notifications ADD COLUMN pending_count BIGINT NOT NULL DEFAULT 0;
                ALTER TABLE notifications ADD COLUMN sent_count BIGINT NOT NULL DEFAULT 0;
                ALTER TABLE notifications ADD COLUMN rejected_count BIGINT NOT NULL DEFAULT 0;
                ALTER TABLE notifications ADD COLUMN dead_count BIGINT NOT NULL DEFAULT 0;
                ALTER TABLE notifications ADD COLUMN retrying_count BIGINT NOT NULL DEFAULT 0;
                ALTER TABLE notifications ADD COLUMN failed_count BIGINT NOT NULL DEFAULT 0;
                ALTER TABLE notifications ADD COLUMN cancelled_count BIGINT NOT NULL DEFAULT 0;
                UPDATE notifications SET pending_count = token_count;
                UPDATE notifications SET
                    pending_count = counted.pending
                        + CASE WHEN notifications.token_count > counted.recorded
                            THEN notifications.token_count - counted.recorded ELSE 0 END,
                    sent_count = counted.sent, rejected_count = counted.rejected, dead_count = counted.dead,
                    retrying_count = counted.retrying, failed_count = counted.failed,
                    cancelled_count = counted.cancelled
                FROM (
                    SELECT notification_id, COUNT(*) AS recorded,
                        SUM(CASE WHEN status = 'pending' THEN 1 ELSE 0 END) AS pending,
                        SUM(CASE WHEN status = 'sent' THEN 1 ELSE 0 END) AS sent,
                        SUM(CASE WHEN status = 'rejected' THEN 1 ELSE 0 END) AS rejected,
                        SUM(CASE WHEN status = 'dead' THEN 1 ELSE 0 END) AS dead,
                        SUM(CASE WHEN status = 'retrying' THEN 1 ELSE 0 END) AS retrying,
                        SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failed,
                        SUM(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END) AS cancelled
                    FROM notification_deliveries GROUP BY notification_id
                ) AS counted
                WHERE notifications.id = counted.notification_id;
                """
        ),
        // Only unfinished results (`pending`, `retrying`) are ever looked up by status: the
        // retry pass reads them in ordinal order, and failing or cancelling a send updates them.
        // An index of every row's status cost each result row an index entry of its own, the
        // first pass's rows included (it writes `sent`, `dead` or `rejected` rows, never
        // `pending`). The partial index holds the unfinished rows only, in the order the retry
        // pass reads them.
        Migration(
            module: "Notifications",
            number: 7,
            name: "notification_deliveries_unfinished",
            sql: """
                DROP INDEX notification_deliveries_status;
                CREATE INDEX notification_deliveries_unfinished ON notification_deliveries (notification_id, ordinal)
                    WHERE status IN ('pending', 'retrying');
                """
        ),
    ]
}
