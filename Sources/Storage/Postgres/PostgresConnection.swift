import CLibPQ
import Glibc
import HeraldCore
import Synchronization

/// What a connection needs to (re)connect and report.
struct PostgresSettings: Sendable {
    var url: DatabaseURL.PostgresURL
    var logger: Logger
    var metrics: DatabaseMetrics
    /// libpq's `connect_timeout` unless the URL sets one (seconds).
    var connectTimeoutSeconds = 10
    /// Statement timeout, keepalives and the pool's acquire deadline.
    var options = DatabaseOptions()
    /// The pause before listening again after a failure sleeps on it.
    var clock: any HeraldClock = SystemClock()

    /// Connection parameters placed before the URL, so that the URL's own values win.
    var connectionParameters: [(String, String)] {
        let statementTimeout = Self.milliseconds(options.statementTimeout)
        return [
            ("connect_timeout", String(connectTimeoutSeconds)),
            ("application_name", "herald"),
            // A peer that vanished without a FIN (half-open connection) is noticed by the kernel:
            // idle, through keepalive probes; with data unacknowledged, through tcp_user_timeout.
            ("keepalives", "1"),
            ("keepalives_idle", String(options.keepaliveIdleSeconds)),
            ("keepalives_interval", String(options.keepaliveIntervalSeconds)),
            ("keepalives_count", String(options.keepaliveCount)),
            ("tcp_user_timeout", String(Self.milliseconds(options.tcpUserTimeout))),
        ]
            // Off sends nothing: a pooler such as PgBouncer may refuse a startup `options` parameter.
            + (statementTimeout > 0 ? [("options", "-c statement_timeout=\(statementTimeout)")] : [])
    }

    /// Whole milliseconds, saturating (a `Duration` can exceed what `Int` holds).
    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return Int(Int32.max) }
        return Int(min(product + attoseconds / 1_000_000_000_000_000, Int64(Int32.max)))
    }
}

/// One pooled PostgreSQL connection with its own thread.
///
/// Every libpq call for this connection runs on ``executor`` (one thread), so the `PGconn` is used
/// by one thread at a time; the state is also behind a `Mutex`.
///
/// Reconnect policy: before a statement is sent, a connection that is missing, marked bad, or whose
/// socket shows the server hung up (a restart sends a FATAL message and closes) is replaced by a
/// new one; this never repeats work because nothing was sent. When a connection breaks while a
/// statement is in flight, the statement is NOT retried (it may have been applied): the call fails
/// with ``DatabaseError/Code/connectionLost`` and the next call reconnects. Inside a transaction
/// only its first statement (`BEGIN`) may reconnect.
final class PostgresConnection: Sendable {
    private struct State {
        var handle: PostgresHandle?
        var hasConnected = false
        /// Counts the connections made: each new one must issue `LISTEN` again. (Not the
        /// handle's identity: a new handle may be allocated where the old one was.)
        var generation = 0
        /// The connection, by ``generation``, on which `LISTEN` was issued.
        var listeningGeneration: Int?
    }

    /// The result of one statement.
    struct Outcome: Sendable {
        var rows: [SQLRow]
        var affected: Int
        var commandStatus: String
    }

    let id: Int
    let executor: BlockingExecutor
    private let settings: PostgresSettings
    private let state = Mutex(State())

    init(id: Int, settings: PostgresSettings) {
        self.id = id
        self.settings = settings
        self.executor = BlockingExecutor(name: "herald-pg-\(id)", threadCount: 1)
    }

    /// Runs `body` on this connection's thread; a shut-down executor means the database was closed.
    func onThread<T: Sendable>(_ body: @Sendable @escaping (PostgresConnection) throws -> T) async throws -> T {
        do {
            return try await executor.run { try body(self) }
        } catch is BlockingExecutorError {
            throw DatabaseError.closed("PostgreSQL")
        }
    }

    // MARK: Blocking operations (executor thread only)

    /// Connects now if not connected (used at open to fail fast on a bad URL or password).
    func connectIfNeeded() throws {
        try state.withLock { state in _ = try ensureConnected(&state, mayReconnect: true) }
    }

    /// Runs one statement with `$n` parameters.
    func run(_ sql: String, _ binds: [SQLValue], mayReconnect: Bool) throws -> Outcome {
        let parameters = try PostgresValues.encode(binds, sql: sql)
        return try state.withLock { state in
            let handle = try ensureConnected(&state, mayReconnect: mayReconnect, sql: sql)
            let result = PostgresValues.withPointers(parameters) { pointers in
                PQexecParams(
                    handle.pointer,
                    sql,
                    Int32(binds.count),
                    parameters.types,
                    pointers,
                    parameters.lengths,
                    parameters.formats,
                    0
                )
            }
            defer { PQclear(result) }
            return try outcome(result, handle: handle, state: &state, sql: sql)
        }
    }

    /// Runs `;`-separated statements without parameters (the simple query protocol).
    func runScript(_ sql: String, mayReconnect: Bool) throws {
        try state.withLock { state in
            let handle = try ensureConnected(&state, mayReconnect: mayReconnect, sql: sql)
            let result = PQexec(handle.pointer, sql)
            defer { PQclear(result) }
            _ = try outcome(result, handle: handle, state: &state, sql: sql)
        }
    }

    /// Waits up to `timeoutMilliseconds` for `NOTIFY`s on `channel` and returns their payloads.
    ///
    /// Issues `LISTEN` whenever it (re)connects; `listening` is then `false` on return, telling the
    /// caller that notifications sent while no connection listened may have been missed.
    func awaitNotifications(
        channel: String,
        timeoutMilliseconds: Int32
    ) throws -> (payloads: [String], listening: Bool) {
        try state.withLock { state in
            let handle = try ensureConnected(&state, mayReconnect: true)
            let fresh = state.listeningGeneration != state.generation
            if fresh {
                let result = PQexec(handle.pointer, "LISTEN \(channel)")
                defer { PQclear(result) }
                _ = try outcome(result, handle: handle, state: &state, sql: "LISTEN \(channel)")
                state.listeningGeneration = state.generation
            }
            var descriptor = pollfd(fd: PQsocket(handle.pointer), events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, fresh ? 0 : timeoutMilliseconds) > 0 {
                guard PQconsumeInput(handle.pointer) != 0, handle.isConnected else {
                    state.handle = nil
                    throw DatabaseError(
                        code: .connectionLost,
                        message: "the PostgreSQL connection listening on \(channel) broke; reconnecting"
                    )
                }
            }
            var payloads: [String] = []
            while let notification = PQnotifies(handle.pointer) {
                payloads.append(String(cString: notification.pointee.extra))
                PQfreemem(notification)
            }
            return (payloads, !fresh)
        }
    }

    /// False only while a live connection is inside a transaction block (a broken or missing
    /// connection has nothing open that could leak to the next user).
    var isIdle: Bool {
        state.withLock { state in
            guard let handle = state.handle, handle.isConnected else { return true }
            return handle.isIdle
        }
    }

    /// Drops the connection (the server rolls back whatever it had open); the next call reconnects.
    func discard() {
        state.withLock { state in state.handle = nil }
    }

    /// Closes the connection for good (the executor is shut down by the caller).
    func close() {
        discard()
    }

    // MARK: Helpers

    private func ensureConnected(
        _ state: inout State,
        mayReconnect: Bool,
        sql: String? = nil
    ) throws -> PostgresHandle {
        if let handle = state.handle {
            if handle.isConnected, !Self.peerHungUp(handle) { return handle }
            state.handle = nil
            guard mayReconnect else {
                throw DatabaseError(
                    code: .connectionLost,
                    message: "the connection to PostgreSQL broke during the transaction; the server rolled it "
                        + "back. Retry the transaction",
                    sql: sql
                )
            }
            settings.logger.warning(
                "PostgreSQL connection broken; reconnecting",
                metadata: [
                    "driver": "postgres", "connection": .int(id),
                    "reason": .string(DatabaseURL.scrub(handle.errorMessage, secrets: settings.url.secrets)),
                ]
            )
        } else if !mayReconnect {
            throw DatabaseError(
                code: .connectionLost,
                message: "the connection to PostgreSQL broke during the transaction; retry the transaction",
                sql: sql
            )
        }
        let handle = try connect()
        if state.hasConnected { settings.metrics.recordReconnect() }
        state.hasConnected = true
        state.handle = handle
        state.generation += 1
        return handle
    }

    /// Opens a new connection; connect_timeout bounds the wait.
    private func connect() throws -> PostgresHandle {
        let parameters = settings.connectionParameters
        let keywords = parameters.map(\.0) + ["dbname"]
        let values = parameters.map(\.1) + [settings.url.libpqURL]
        let pointer = Self.withCStrings(keywords) { keywords in
            Self.withCStrings(values) { values in PQconnectdbParams(keywords, values, 1) }
        }
        guard let pointer else {
            throw DatabaseError(code: .connectionFailed, message: "libpq could not allocate a connection")
        }
        let handle = PostgresHandle(takingOwnershipOf: pointer, logger: settings.logger)
        guard handle.isConnected else {
            let reason = DatabaseURL.scrub(handle.errorMessage, secrets: settings.url.secrets)
            throw DatabaseError(
                code: .connectionFailed,
                message: "cannot connect to PostgreSQL at \(settings.url.redacted): \(reason). Check DATABASE_URL "
                    + "and that the server is running"
            )
        }
        return handle
    }

    /// Whether the server closed an idle connection (restart, idle timeout, terminated backend):
    /// the socket is readable although no statement is in flight. Reads what is there so that libpq
    /// notices the end of the stream and marks the connection bad.
    private static func peerHungUp(_ handle: PostgresHandle) -> Bool {
        let socket = PQsocket(handle.pointer)
        guard socket >= 0 else { return true }
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, 0) > 0 else { return false }
        // A restart delivers a FATAL message then end-of-stream: the first read takes the message,
        // a later one sees the end. Healthy connections have at most a notification or two.
        for _ in 0..<4 {
            if PQconsumeInput(handle.pointer) == 0 || !handle.isConnected { return true }
            descriptor.revents = 0
            guard poll(&descriptor, 1, 0) > 0 else { return false }
        }
        return !handle.isConnected
    }

    /// Turns a `PGresult` into rows or an error; drops the connection when it broke.
    private func outcome(
        _ result: OpaquePointer?,
        handle: PostgresHandle,
        state: inout State,
        sql: String
    ) throws -> Outcome {
        let status = result.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        switch status {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK:
            guard let result else { preconditionFailure("libpq returned a status without a result") }
            let commandStatus = String(cString: PQcmdStatus(result))
            // PQcmdTuples also counts the rows a SELECT returned; only changes count here.
            let changes = ["INSERT", "UPDATE", "DELETE", "MERGE"].contains { commandStatus.hasPrefix($0 + " ") }
            return Outcome(
                rows: Self.rows(result),
                affected: changes ? Int(String(cString: PQcmdTuples(result))) ?? 0 : 0,
                commandStatus: commandStatus
            )
        case PGRES_EMPTY_QUERY:
            throw DatabaseError(code: .queryFailed, message: "the SQL text contains no statement", sql: sql)
        default:
            let error = self.error(result, handle: handle, sql: sql)
            if error.code == .connectionLost { state.handle = nil }
            throw error
        }
    }

    private static func rows(_ result: OpaquePointer) -> [SQLRow] {
        let rowCount = PQntuples(result)
        let columnCount = PQnfields(result)
        guard rowCount > 0 else { return [] }
        let columns = (0..<columnCount).map { String(cString: PQfname(result, $0)) }
        let types = (0..<columnCount).map { PQftype(result, $0) }
        var rows: [SQLRow] = []
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            let values = (0..<columnCount).map { column in
                PostgresValues.decode(result, row: row, column: column, type: types[Int(column)])
            }
            rows.append(SQLRow(columns: columns, values: values))
        }
        return rows
    }

    private func error(_ result: OpaquePointer?, handle: PostgresHandle, sql: String) -> DatabaseError {
        let secrets = settings.url.secrets
        let sqlState = PostgresDiagnostics.field(result, PostgresDiagnostics.sqlState)
        let primary = PostgresDiagnostics.field(result, PostgresDiagnostics.messagePrimary) ?? handle.errorMessage
        var message = DatabaseURL.scrub(primary, secrets: secrets)
        if let position = PostgresDiagnostics.field(result, PostgresDiagnostics.statementPosition) {
            message += " (at character \(position))"
        }
        if let hint = PostgresDiagnostics.field(result, PostgresDiagnostics.messageHint) {
            message += ". Hint: \(DatabaseURL.scrub(hint, secrets: secrets))"
        }
        let detail = PostgresDiagnostics.field(result, PostgresDiagnostics.messageDetail)
        let constraint = PostgresDiagnostics.field(result, PostgresDiagnostics.constraintName)
        let code: DatabaseError.Code
        // 08P01 (protocol violation, e.g. a wrong number of binds) leaves the connection usable.
        let lostStates: Set<String?> = ["08000", "08003", "08006", "57P01", "57P02", "57P03"]
        let lost = !handle.isConnected || lostStates.contains(sqlState)
        if lost {
            code = .connectionLost
            message =
                "the connection to PostgreSQL was lost while the statement ran (\(message)); it may or may "
                + "not have been applied. The next call reconnects"
        } else if sqlState == "23505" {
            code = .uniqueViolation
        } else if sqlState?.hasPrefix("23") == true {
            code = .constraintViolation
        } else if sqlState == "40001" || sqlState == "40P01" {
            code = .serializationFailure
        } else if sqlState == "55P03" {
            code = .lockTimeout
        } else if sqlState == "57014" {
            code = .statementTimeout
            message += "; the statement ran longer than the statement timeout (HERALD_DB_STATEMENT_TIMEOUT)"
        } else {
            code = .queryFailed
        }
        return DatabaseError(
            code: code,
            message: message,
            sqlState: sqlState,
            constraint: constraint,
            detail: detail.map { DatabaseURL.scrub($0, secrets: secrets) },
            sql: sql
        )
    }

    /// A NULL-terminated array of C strings, valid during `body`.
    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        return body(copies.map { UnsafePointer($0) } + [nil])
    }
}
