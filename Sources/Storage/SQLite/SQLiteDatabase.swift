import HeraldCore
import Synchronization

/// The embedded driver: one SQLite connection on one dedicated thread.
///
/// SQLite allows one writer at a time, so Herald keeps a single connection and serialises every
/// statement and transaction on it: a ``LeasePool`` of one is the async lock, and a single-thread
/// ``BlockingExecutor`` runs every `sqlite3_*` call off the cooperative pool. Files use WAL mode
/// (readers in other processes don't block the writer), `synchronous=NORMAL`, foreign keys on and
/// a busy timeout for other processes holding the lock.
final class SQLiteDatabase: Database {
    /// How long a statement waits for another process's lock before failing.
    static let busyTimeoutMilliseconds: Int32 = 5000

    let dialect = SQLDialect.sqlite
    private let connection: SQLiteConnection
    private let executor: BlockingExecutor
    private let lease: LeasePool<SQLiteConnection>
    private let metrics: DatabaseMetrics
    private let logger: Logger
    private let isClosed = Atomic(false)

    private init(connection: SQLiteConnection, executor: BlockingExecutor, metrics: DatabaseMetrics, logger: Logger) {
        self.connection = connection
        self.executor = executor
        self.lease = LeasePool([connection])
        self.metrics = metrics
        self.logger = logger
    }

    /// Opens `path` (created if missing) or `:memory:`.
    static func open(path: String, logger: Logger, metrics: MetricsRegistry) async throws -> SQLiteDatabase {
        let connection = SQLiteConnection(path: path)
        let executor = BlockingExecutor(name: "herald-sqlite", threadCount: 1)
        do {
            let preparations = try await executor.run { try preparePrivateFiles(path) }
            for (file, preparation) in preparations {
                switch preparation {
                case .tightened(let mode):
                    logger.notice(
                        "removed group and other permissions from a database file",
                        metadata: [
                            "path": .string(file), "old_mode": .string(String(mode, radix: 8)), "new_mode": "600",
                        ]
                    )
                case .notTightened(let mode, let reason):
                    logger.warning(
                        "a database file is readable by other accounts and its mode cannot be changed by this one",
                        metadata: [
                            "path": .string(file), "mode": .string(String(mode, radix: 8)), "reason": .string(reason),
                        ]
                    )
                case .created, .unchanged:
                    break
                }
            }
            try await executor.run { try connection.open(busyTimeoutMilliseconds: busyTimeoutMilliseconds) }
        } catch {
            await executor.shutdownGracefully()
            throw error
        }
        logger.info("opened database", metadata: ["driver": "sqlite", "path": .string(path)])
        return SQLiteDatabase(
            connection: connection,
            executor: executor,
            metrics: DatabaseMetrics(registry: metrics, dialect: .sqlite),
            logger: logger
        )
    }

    /// Files SQLite keeps beside the database, created with the database file's mode.
    static let companionSuffixes = ["-wal", "-shm", "-journal"]

    /// Creates the database file with mode 0600 before SQLite opens it (SQLite gives its `-wal`,
    /// `-shm` and `-journal` files the database file's mode), and removes group and other
    /// permissions from an existing database file and companions that have them. `:memory:` and
    /// `file:` URIs are left to SQLite.
    /// - Returns: what was done to each file that exists.
    static func preparePrivateFiles(_ path: String) throws -> [(String, PrivateFile.Preparation)] {
        guard path != ":memory:", !path.hasPrefix("file:") else { return [] }
        do {
            var done = [(path, try PrivateFile.prepare(path))]
            for suffix in companionSuffixes {
                done.append((path + suffix, try PrivateFile.tighten(path + suffix)))
            }
            return done
        } catch {
            throw DatabaseError(
                code: .connectionFailed,
                message: "cannot open SQLite database '\(path)': \(error)"
            )
        }
    }

    // MARK: DatabaseExecutor

    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try await withConnection(sql) { try $0.run(sql, binds).rows }
    }

    @discardableResult
    func execute(_ sql: String, _ binds: [SQLValue]) async throws -> Int {
        try await withConnection(sql) { try $0.run(sql, binds).changes }
    }

    func executeScript(_ sql: String) async throws {
        try await withConnection(sql) { try $0.runScript(sql) }
    }

    // MARK: Database

    @discardableResult
    func transaction<T: Sendable>(_ body: @Sendable (any DatabaseExecutor) async throws -> T) async throws -> T {
        try checkNotReentered("transaction")
        return try await lease.withLease { connection in
            // `BEGIN IMMEDIATE` goes with the body's first statement, in its trip to the
            // database thread: one trip fewer per transaction.
            let transaction = SQLiteTransaction(connection: connection, database: self)
            let result: T
            do {
                result = try await TransactionScope.$databases.withValue(
                    TransactionScope.databases.union([ObjectIdentifier(self)])
                ) {
                    try await body(transaction)
                }
            } catch {
                transaction.end()
                if transaction.hasBegun { await rollback(connection) }
                throw error
            }
            transaction.end()
            // A body that ran no statement began nothing, and has nothing to commit.
            guard transaction.hasBegun else { return result }
            do {
                _ = try await onThread { try connection.run("COMMIT", []) }
            } catch {
                await rollback(connection)
                throw error
            }
            return result
        }
    }

    /// One process owns a SQLite database, so nothing arrives from elsewhere: the subscription
    /// only checks the channel name and never calls back.
    func subscribe(
        channel: String,
        _ onNotification: @escaping @Sendable (String?) -> Void
    ) async throws -> DatabaseSubscription {
        try DatabaseSubscription.validate(channel: channel)
        return DatabaseSubscription {}
    }

    func ping() async throws {
        _ = try await query("SELECT 1", [])
    }

    func close() async {
        guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        lease.close(with: .closed("SQLite"))
        await lease.waitUntilAllReturned()
        _ = try? await executor.run { [connection] in connection.close() }
        await executor.shutdownGracefully()
        logger.info("closed database", metadata: ["driver": "sqlite"])
    }

    // MARK: Helpers

    /// Runs one statement on the leased connection's thread, measured.
    private func withConnection<T: Sendable>(
        _ sql: String,
        _ body: @Sendable @escaping (SQLiteConnection) throws -> T
    ) async throws -> T {
        try checkNotReentered("query")
        return try await metrics.measure {
            try await lease.withLease { connection in
                try await onThread { try body(connection) }
            }
        }
    }

    /// Runs `body` on the executor thread; a shut-down executor means the database was closed.
    func onThread<T: Sendable>(_ body: @Sendable @escaping () throws -> T) async throws -> T {
        do {
            return try await executor.run(body)
        } catch is BlockingExecutorError {
            throw DatabaseError.closed("SQLite")
        }
    }

    /// Statements of a transaction, measured like top-level ones.
    func measured<T>(_ body: () async throws -> T) async throws -> T {
        try await metrics.measure(body)
    }

    private func rollback(_ connection: SQLiteConnection) async {
        do {
            try await onThread {
                // Some errors (disk full, I/O) end the transaction themselves.
                if !connection.isAutocommit { _ = try connection.run("ROLLBACK", []) }
            }
        } catch {
            logger.error("rollback failed", metadata: ["driver": "sqlite", "error": .string("\(error)")])
        }
    }

    /// The single connection is leased by the transaction; waiting for it again would deadlock.
    private func checkNotReentered(_ what: String) throws {
        guard TransactionScope.databases.contains(ObjectIdentifier(self)) else { return }
        throw DatabaseError(
            code: .transactionMisuse,
            message: "\(what) called on the database inside one of its own transactions; use the executor passed "
                + "to the transaction body (SQLite has one connection, so this would wait forever)"
        )
    }
}

/// The executor handed to a SQLite transaction body; valid until the body returns. Its first
/// statement begins the transaction (`BEGIN IMMEDIATE`, on the database thread just before it).
final class SQLiteTransaction: DatabaseExecutor {
    let dialect = SQLDialect.sqlite
    private let connection: SQLiteConnection
    private let database: SQLiteDatabase
    private let isActive = Atomic(true)
    /// Set on the database thread when `BEGIN IMMEDIATE` has run.
    private let begun = Atomic(false)

    /// Whether a statement ran, and so the transaction began.
    var hasBegun: Bool { begun.load(ordering: .acquiring) }

    init(connection: SQLiteConnection, database: SQLiteDatabase) {
        self.connection = connection
        self.database = database
    }

    func end() {
        isActive.store(false, ordering: .releasing)
    }

    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try await run(sql) { try $0.run(sql, binds).rows }
    }

    @discardableResult
    func execute(_ sql: String, _ binds: [SQLValue]) async throws -> Int {
        try await run(sql) { try $0.run(sql, binds).changes }
    }

    func executeScript(_ sql: String) async throws {
        try await run(sql) { try $0.runScript(sql) }
    }

    private func run<T: Sendable>(
        _ sql: String,
        _ body: @Sendable @escaping (SQLiteConnection) throws -> T
    ) async throws -> T {
        guard isActive.load(ordering: .acquiring) else { throw TransactionScope.endedError(sql: sql) }
        let connection = connection
        return try await database.measured {
            try await database.onThread { [self] in
                // The database thread runs one closure at a time: statements the body runs
                // concurrently still begin the transaction once.
                if !begun.load(ordering: .acquiring) {
                    _ = try connection.run("BEGIN IMMEDIATE", [])
                    begun.store(true, ordering: .releasing)
                }
                return try body(connection)
            }
        }
    }
}

/// The databases whose transaction the current task is inside, to catch re-entry.
enum TransactionScope {
    @TaskLocal static var databases: Set<ObjectIdentifier> = []

    static func endedError(sql: String) -> DatabaseError {
        DatabaseError(
            code: .transactionMisuse,
            message: "the transaction has already ended; keep the executor inside the transaction body",
            sql: sql
        )
    }
}
