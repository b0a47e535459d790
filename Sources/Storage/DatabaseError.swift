/// An error from a ``Database``: what went wrong, in a sentence that says what to fix.
///
/// Match on ``code`` (``Code/uniqueViolation`` for duplicate keys in both dialects) or on
/// ``sqlState``, PostgreSQL's five-character SQLSTATE. SQLite constraint failures carry the
/// equivalent SQLSTATE too (`23505` unique, `23503` foreign key, `23502` not null, `23514` check),
/// so callers can write one check for both drivers.
///
/// Neither ``description`` nor ``message`` ever contains a password from a connection URL, nor a
/// bound value. The server's ``detail`` (which for a unique violation quotes the duplicate key) is
/// kept out of ``description``.
public struct DatabaseError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure. New kinds may be added; compare with `==`, don't switch exhaustively.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidURL = "invalid_url"
            case connectionFailed = "connection_failed"
            case connectionLost = "connection_lost"
            case closed
            case uniqueViolation = "unique_violation"
            case constraintViolation = "constraint_violation"
            case serializationFailure = "serialization_failure"
            case lockTimeout = "lock_timeout"
            case acquireTimeout = "acquire_timeout"
            case statementTimeout = "statement_timeout"
            case queryFailed = "query_failed"
            case typeMismatch = "type_mismatch"
            case transactionMisuse = "transaction_misuse"
            case migrationFailed = "migration_failed"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The `DATABASE_URL` cannot be understood.
        public static let invalidURL = Code(.invalidURL)
        /// Opening a connection failed (server down, wrong credentials, file not writable).
        public static let connectionFailed = Code(.connectionFailed)
        /// The connection broke while a statement was in flight; whether it was applied is unknown.
        /// The next call reconnects.
        public static let connectionLost = Code(.connectionLost)
        /// The database was closed with ``Database/close()``.
        public static let closed = Code(.closed)
        /// A unique or primary-key constraint rejected the row (SQLSTATE 23505).
        public static let uniqueViolation = Code(.uniqueViolation)
        /// Another integrity constraint (foreign key, not null, check) rejected the row (23xxx).
        public static let constraintViolation = Code(.constraintViolation)
        /// A serialization failure or deadlock (40001, 40P01): retrying the transaction may succeed.
        public static let serializationFailure = Code(.serializationFailure)
        /// A lock could not be taken in time (SQLite `SQLITE_BUSY`, PostgreSQL 55P03).
        public static let lockTimeout = Code(.lockTimeout)
        /// No pooled connection became free before the acquire deadline (every one was busy).
        public static let acquireTimeout = Code(.acquireTimeout)
        /// The statement ran past the statement timeout and the server cancelled it (57014).
        public static let statementTimeout = Code(.statementTimeout)
        /// The statement failed (syntax, missing table, wrong parameter count, …).
        public static let queryFailed = Code(.queryFailed)
        /// A ``SQLRow`` accessor found a different type, a NULL, or no such column.
        public static let typeMismatch = Code(.typeMismatch)
        /// A transaction was used wrongly (after it ended, or the database re-entered inside it).
        public static let transactionMisuse = Code(.transactionMisuse)
        /// A migration is invalid or failed to apply.
        public static let migrationFailed = Code(.migrationFailed)

        public var description: String { base.rawValue }
    }

    /// The kind of failure.
    public let code: Code
    /// What went wrong and, where it can be known, what to do about it.
    public let message: String
    /// PostgreSQL's SQLSTATE, or the equivalent for an SQLite constraint failure.
    public let sqlState: String?
    /// The constraint that rejected a row, when the database names it.
    public let constraint: String?
    /// The server's detail line; may quote row values, so it is not part of ``description``.
    public let detail: String?
    /// The statement that failed (never its bound values).
    public let sql: String?

    public init(
        code: Code,
        message: String,
        sqlState: String? = nil,
        constraint: String? = nil,
        detail: String? = nil,
        sql: String? = nil
    ) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.constraint = constraint
        self.detail = detail
        self.sql = sql
    }

    /// True for a unique or primary-key violation in either dialect.
    public var isUniqueViolation: Bool { code == .uniqueViolation }

    /// True when the connection could not be opened or broke; the next call reconnects.
    public var isConnectionError: Bool { code == .connectionFailed || code == .connectionLost }

    /// True when the database is busy or unreachable rather than the request wrong: the connection
    /// failed or broke, a lock or a pooled connection was not free in time, or the statement timed
    /// out. Retrying later may succeed; HeraldAPI answers these with 503 `database_unavailable`.
    public var isUnavailable: Bool {
        code == .connectionFailed || code == .connectionLost || code == .lockTimeout || code == .acquireTimeout
            || code == .statementTimeout
    }

    public var description: String {
        var text = "database error (\(code)"
        if let sqlState { text += ", SQLSTATE \(sqlState)" }
        text += "): \(message)"
        if let constraint { text += " [constraint \(constraint)]" }
        if let sql {
            let flat = sql.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            text += " — statement: " + (flat.count > 200 ? String(flat.prefix(200)) + "…" : flat)
        }
        return text
    }

    /// A copy with the statement attached.
    func with(sql: String) -> DatabaseError {
        DatabaseError(
            code: code,
            message: message,
            sqlState: sqlState,
            constraint: constraint,
            detail: detail,
            sql: sql
        )
    }

    static func closed(_ what: String) -> DatabaseError {
        DatabaseError(code: .closed, message: "the \(what) database has been closed; open a new one")
    }
}
