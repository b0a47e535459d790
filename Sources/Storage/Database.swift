/// Which SQL dialect a database speaks; repositories pick per-dialect SQL with it.
public enum SQLDialect: String, Sendable, Hashable, CustomStringConvertible {
    case sqlite
    case postgres

    public var description: String { rawValue }
}

/// What a connection or a transaction can do: run one statement.
///
/// Placeholders are `$1, $2, …` in both dialects, in any order; the n-th bind fills `$n`. The
/// number of binds must equal the number of distinct placeholders. Statements are single
/// statements; use ``executeScript(_:)`` for several separated by `;` (migrations).
///
/// Portable SQL notes: cast with `CAST(x AS BIGINT)`, not `x::bigint` (SQLite has no `::`); store
/// times as `BIGINT` milliseconds (``SQLValue/init(_:)-(Date)``); use `RETURNING` (both support it);
/// alias computed columns.
public protocol DatabaseExecutor: Sendable {
    /// The dialect of the database behind this executor.
    var dialect: SQLDialect { get }

    /// Runs a statement and returns every row it produced.
    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow]

    /// Runs a statement and returns the number of rows it inserted, updated or deleted.
    @discardableResult
    func execute(_ sql: String, _ binds: [SQLValue]) async throws -> Int

    /// Runs several `;`-separated statements without binds (DDL in migrations).
    func executeScript(_ sql: String) async throws
}

extension DatabaseExecutor {
    /// Runs a statement without binds and returns its rows.
    public func query(_ sql: String) async throws -> [SQLRow] {
        try await query(sql, [])
    }

    /// Runs a statement without binds and returns the number of rows changed.
    @discardableResult
    public func execute(_ sql: String) async throws -> Int {
        try await execute(sql, [])
    }

    /// The first row, or `nil` when there is none.
    public func queryFirst(_ sql: String, _ binds: [SQLValue] = []) async throws -> SQLRow? {
        try await query(sql, binds).first
    }

    /// Default for executors that cannot run scripts: runs the text as one statement.
    public func executeScript(_ sql: String) async throws {
        try await execute(sql, [])
    }
}

/// A database: a connection (SQLite) or a pool of connections (PostgreSQL) that runs statements
/// and transactions. Open one with ``DatabaseFactory/open(url:logger:metrics:)``.
///
/// ```swift
/// let db = try await DatabaseFactory.open(url: "sqlite:herald.sqlite", logger: logger)
/// try await Migrator.migrate(db, StorageMigrations.all, logger: logger)
/// let id = try await db.transaction { tx in
///     try await tx.query("INSERT INTO kv_settings (key, value, updated_at) VALUES ($1, $2, $3) RETURNING key",
///                        ["k", "v", SQLValue(Date())])[0].string("key")
/// }
/// await db.close()
/// ```
public protocol Database: DatabaseExecutor {
    /// Runs `body` in a transaction on one connection: committed when `body` returns, rolled back
    /// when it throws. SQLite starts it with `BEGIN IMMEDIATE` (it takes the write lock at once).
    ///
    /// Inside `body`, use the executor it is given, not the database: on SQLite the database is
    /// busy with the transaction (re-entering it throws ``DatabaseError/Code/transactionMisuse``),
    /// and on PostgreSQL another connection would not see the transaction's changes.
    @discardableResult
    func transaction<T: Sendable>(_ body: @Sendable (any DatabaseExecutor) async throws -> T) async throws -> T

    /// Calls `onNotification` with the payload of every `NOTIFY` on `channel` (from any connection,
    /// any process) until the subscription is cancelled, and with `nil` when notifications may have
    /// been missed (the listening connection was re-established). SQLite has no notifications
    /// between processes: its subscription never calls back.
    func subscribe(
        channel: String,
        _ onNotification: @escaping @Sendable (String?) -> Void
    ) async throws -> DatabaseSubscription

    /// Checks that the database answers (`SELECT 1`), reconnecting if needed; for `/readyz`.
    func ping() async throws

    /// Closes every connection after work in flight. Later calls throw ``DatabaseError/Code/closed``.
    func close() async
}

/// A running ``Database/subscribe(channel:_:)``; ``cancel()`` stops it and waits until no more
/// callbacks come.
public final class DatabaseSubscription: Sendable {
    private let stop: @Sendable () async -> Void

    public init(stop: @escaping @Sendable () async -> Void) {
        self.stop = stop
    }

    /// Stops listening; returns when the last callback has returned.
    public func cancel() async {
        await stop()
    }

    /// Channel names are SQL identifiers written into `LISTEN`: lowercase letters, digits and `_`.
    static func validate(channel: String) throws {
        let valid =
            !channel.isEmpty && channel.utf8.count <= 63
            && channel.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 95 }
        guard valid else {
            throw DatabaseError(
                code: .queryFailed,
                message: "notification channel \"\(channel)\" must be 1-63 lowercase letters, digits or _"
            )
        }
    }
}
