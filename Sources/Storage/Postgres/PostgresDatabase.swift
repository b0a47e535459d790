import HeraldCore
import Synchronization

/// The shared driver: a pool of libpq connections, each used by its own thread.
///
/// A statement leases a connection, runs on that connection's thread and gives it back; a
/// transaction keeps its connection from `BEGIN` to `COMMIT`/`ROLLBACK`. Connections open lazily
/// (the first at ``open(_:logger:metrics:)`` to fail fast) and reconnect as described on
/// ``PostgresConnection``.
final class PostgresDatabase: Database {
    let dialect = SQLDialect.postgres
    private let pool: LeasePool<PostgresConnection>
    private let settings: PostgresSettings
    private let isClosed = Atomic(false)
    /// The pause before listening again after a failure: 0.2 s, doubling to 5 s, without jitter.
    private static let listenBackoff = Backoff(initial: .milliseconds(200), maximum: .seconds(5), jitter: .none)

    private init(connections: [PostgresConnection], settings: PostgresSettings) {
        self.pool = LeasePool(connections)
        self.settings = settings
    }

    static func open(
        _ url: DatabaseURL.PostgresURL,
        logger: Logger,
        metrics: MetricsRegistry,
        options: DatabaseOptions = DatabaseOptions(),
        clock: any HeraldClock = SystemClock()
    ) async throws -> PostgresDatabase {
        var settings = PostgresSettings(
            url: url,
            logger: logger,
            metrics: DatabaseMetrics(registry: metrics, dialect: .postgres)
        )
        settings.options = options
        settings.clock = clock
        let connections = (0..<url.poolSize).map { PostgresConnection(id: $0, settings: settings) }
        do {
            try await connections[0].onThread { try $0.connectIfNeeded() }
        } catch {
            for connection in connections { await connection.executor.shutdownGracefully() }
            throw error
        }
        logger.info(
            "opened database",
            metadata: ["driver": "postgres", "url": .string(url.redacted), "pool_size": .int(url.poolSize)]
        )
        return PostgresDatabase(connections: connections, settings: settings)
    }

    // MARK: DatabaseExecutor

    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try await statement(sql) { try $0.run(sql, binds, mayReconnect: true) }.rows
    }

    @discardableResult
    func execute(_ sql: String, _ binds: [SQLValue]) async throws -> Int {
        try await statement(sql) { try $0.run(sql, binds, mayReconnect: true) }.affected
    }

    func executeScript(_ sql: String) async throws {
        _ = try await statement(sql) { connection in
            try connection.runScript(sql, mayReconnect: true)
            return PostgresConnection.Outcome(rows: [], affected: 0, commandStatus: "")
        }
    }

    // MARK: Database

    @discardableResult
    func transaction<T: Sendable>(_ body: @Sendable (any DatabaseExecutor) async throws -> T) async throws -> T {
        try checkNotReentered("transaction")
        return try await lease { connection in
            try await connection.onThread { _ = try $0.run("BEGIN", [], mayReconnect: true) }
            let transaction = PostgresTransaction(connection: connection, metrics: settings.metrics)
            let result: T
            do {
                result = try await TransactionScope.$databases.withValue(
                    TransactionScope.databases.union([ObjectIdentifier(self)])
                ) {
                    try await body(transaction)
                }
            } catch {
                transaction.end()
                await rollback(connection)
                throw error
            }
            transaction.end()
            let commit: PostgresConnection.Outcome
            do {
                commit = try await connection.onThread { try $0.run("COMMIT", [], mayReconnect: false) }
            } catch {
                await rollback(connection)
                throw error
            }
            guard commit.commandStatus == "COMMIT" else {
                // COMMIT of a transaction in which a statement failed (and the error was caught)
                // is answered with ROLLBACK.
                throw DatabaseError(
                    code: .queryFailed,
                    message: "the transaction was rolled back because one of its statements failed; let the error "
                        + "propagate out of the transaction body, or retry the whole transaction"
                )
            }
            return result
        }
    }

    func subscribe(
        channel: String,
        _ onNotification: @escaping @Sendable (String?) -> Void
    ) async throws -> DatabaseSubscription {
        try DatabaseSubscription.validate(channel: channel)
        let connection = PostgresConnection(id: -1, settings: settings)
        try await connection.onThread { try $0.connectIfNeeded() }
        let logger = settings.logger
        let clock = settings.clock
        let task = Task {
            var failures = 0
            while !Task.isCancelled {
                do {
                    let (payloads, listening) = try await connection.onThread {
                        try $0.awaitNotifications(channel: channel, timeoutMilliseconds: 250)
                    }
                    if !listening { onNotification(nil) }
                    for payload in payloads { onNotification(payload) }
                    failures = 0
                } catch is CancellationError {
                    break
                } catch let error as DatabaseError where error.code == .closed {
                    break
                } catch {
                    failures += 1
                    logger.warning(
                        "listening for PostgreSQL notifications failed; retrying",
                        metadata: ["driver": "postgres", "channel": .string(channel), "error": .string("\(error)")]
                    )
                    try? await clock.sleep(for: Self.listenBackoff.delay(afterAttempt: failures))
                }
            }
        }
        return DatabaseSubscription {
            task.cancel()
            _ = await task.value
            _ = try? await connection.onThread { $0.close() }
            await connection.executor.shutdownGracefully()
        }
    }

    func ping() async throws {
        _ = try await query("SELECT 1", [])
    }

    func close() async {
        guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        pool.close(with: .closed("PostgreSQL"))
        await pool.waitUntilAllReturned()
        for connection in pool.all {
            _ = try? await connection.onThread { $0.close() }
            await connection.executor.shutdownGracefully()
        }
        settings.logger.info("closed database", metadata: ["driver": "postgres"])
    }

    // MARK: Helpers

    private func statement(
        _ sql: String,
        _ body: @Sendable @escaping (PostgresConnection) throws -> PostgresConnection.Outcome
    ) async throws -> PostgresConnection.Outcome {
        try checkNotReentered("query")
        return try await settings.metrics.measure {
            try await lease { connection in
                try await connection.onThread { connection in
                    let outcome = try body(connection)
                    guard connection.isIdle else {
                        // A BEGIN outside transaction(_:) would leak an open transaction to the
                        // next user of this pooled connection.
                        connection.discard()
                        throw DatabaseError(
                            code: .transactionMisuse,
                            message: "the statement left a transaction open on a pooled connection (it was closed "
                                + "and rolled back); use Database.transaction instead of BEGIN",
                            sql: sql
                        )
                    }
                    return outcome
                }
            }
        }
    }

    /// Runs `body` with a pooled connection, waiting at most the acquire timeout for one.
    private func lease<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        guard let timeout = settings.options.acquireTimeout else { return try await pool.withLease(body) }
        return try await pool.withLease(
            timeout: timeout,
            timeoutError: DatabaseError(
                code: .acquireTimeout,
                message: "no PostgreSQL connection became free within \(timeout) (all \(pool.all.count) were busy); "
                    + "retry later, or raise pool_size in DATABASE_URL or HERALD_DB_ACQUIRE_TIMEOUT"
            ),
            body
        )
    }

    private func rollback(_ connection: PostgresConnection) async {
        do {
            try await connection.onThread { connection in
                _ = try connection.run("ROLLBACK", [], mayReconnect: false)
                if !connection.isIdle { connection.discard() }
            }
        } catch {
            // A broken connection: the server rolls back when the session ends.
            _ = try? await connection.onThread { $0.discard() }
            settings.logger.warning(
                "rollback failed; connection discarded",
                metadata: ["driver": "postgres", "error": .string("\(error)")]
            )
        }
    }

    private func checkNotReentered(_ what: String) throws {
        guard TransactionScope.databases.contains(ObjectIdentifier(self)) else { return }
        throw DatabaseError(
            code: .transactionMisuse,
            message: "\(what) called on the database inside one of its own transactions; use the executor passed "
                + "to the transaction body (another connection would not see the transaction's changes)"
        )
    }
}

/// The executor handed to a PostgreSQL transaction body: statements on the pinned connection.
final class PostgresTransaction: DatabaseExecutor {
    let dialect = SQLDialect.postgres
    private let connection: PostgresConnection
    private let metrics: DatabaseMetrics
    private let isActive = Atomic(true)

    init(connection: PostgresConnection, metrics: DatabaseMetrics) {
        self.connection = connection
        self.metrics = metrics
    }

    func end() {
        isActive.store(false, ordering: .releasing)
    }

    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try await run(sql) { try $0.run(sql, binds, mayReconnect: false) }.rows
    }

    @discardableResult
    func execute(_ sql: String, _ binds: [SQLValue]) async throws -> Int {
        try await run(sql) { try $0.run(sql, binds, mayReconnect: false) }.affected
    }

    func executeScript(_ sql: String) async throws {
        _ = try await run(sql) { connection in
            try connection.runScript(sql, mayReconnect: false)
            return PostgresConnection.Outcome(rows: [], affected: 0, commandStatus: "")
        }
    }

    private func run(
        _ sql: String,
        _ body: @Sendable @escaping (PostgresConnection) throws -> PostgresConnection.Outcome
    ) async throws -> PostgresConnection.Outcome {
        guard isActive.load(ordering: .acquiring) else { throw TransactionScope.endedError(sql: sql) }
        return try await metrics.measure {
            try await connection.onThread(body)
        }
    }
}
