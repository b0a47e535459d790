public import Storage

/// The Polls tables, numbered in this module (``Storage/Migration``); never change one that has
/// shipped.
///
/// 1: `polls` (one row per poll: its question, options as a JSON array, host, closing time, the
/// Live Activity it started and when it became final) and `poll_members` (one row per member,
/// with the member's vote: voting is an update of the member's own row).
public enum PollMigrations {
    public static let all: [Migration] = [
        Migration(
            module: "Polls",
            number: 1,
            name: "create_polls",
            sql: """
                CREATE TABLE polls (
                    id TEXT PRIMARY KEY,
                    app TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    question TEXT NOT NULL,
                    options TEXT NOT NULL,
                    host_user_id TEXT,
                    closes_at BIGINT,
                    live_activity_id TEXT,
                    content_state TEXT,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL,
                    finalized_at BIGINT
                );
                CREATE INDEX polls_created ON polls (created_at, id);
                CREATE TABLE poll_members (
                    poll_id TEXT NOT NULL,
                    user_id TEXT NOT NULL,
                    position BIGINT NOT NULL,
                    name TEXT NOT NULL,
                    option TEXT,
                    voted_at BIGINT,
                    PRIMARY KEY (poll_id, user_id)
                );
                CREATE INDEX poll_members_user ON poll_members (user_id, poll_id);
                """
        )
    ]
}
