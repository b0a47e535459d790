public import Storage

/// The boards' tables, numbered in this module (``Storage/Migration``); never change one that has
/// shipped.
///
/// 1: `boards`, one row per activity created with a board: when its first member arrived, when
/// the last did, when its nudge went (each set once, so each happens once); `board_members`,
/// a row per member once the member first posted, with the arrival. ETAs are not stored durably:
/// on PostgreSQL, where several instances share a board, they are in unlogged tables.
public enum BoardMigrations {
    public static let all: [Migration] = [
        Migration(
            module: "Boards",
            number: 1,
            name: "create_boards",
            sqlite: durable,
            postgres: durable + shared
        )
    ]

    private static let durable = """
        CREATE TABLE boards (
            live_activity_id TEXT PRIMARY KEY,
            created_at BIGINT NOT NULL,
            first_arrival_at BIGINT,
            all_arrived_at BIGINT,
            nudged_at BIGINT
        );
        CREATE TABLE board_members (
            live_activity_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            posted_at BIGINT NOT NULL,
            arrived_at BIGINT,
            PRIMARY KEY (live_activity_id, user_id)
        );

        """

    /// What the instances sharing a PostgreSQL database share of a board: the ETAs and the
    /// broadcast slot, in unlogged tables (no WAL, no fsync; emptied by a crash of the server,
    /// after which members' next posts fill them again).
    private static let shared = """
        CREATE UNLOGGED TABLE board_etas (
            live_activity_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            eta_minutes BIGINT NOT NULL,
            updated_at BIGINT NOT NULL,
            PRIMARY KEY (live_activity_id, user_id)
        );
        CREATE UNLOGGED TABLE board_slots (
            live_activity_id TEXT PRIMARY KEY,
            next_at_ms BIGINT NOT NULL,
            dirty BOOLEAN NOT NULL,
            alert_title TEXT,
            alert_body TEXT
        );
        """
}
