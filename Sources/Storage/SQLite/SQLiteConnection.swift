import CSQLite
import Synchronization

/// One SQLite connection and its statement cache.
///
/// Every method is synchronous and blocking; ``SQLiteDatabase`` calls them only from its
/// single-thread ``HeraldCore/BlockingExecutor``, one at a time. The state also sits behind a
/// `Mutex`, so even a misuse from another thread could not race (it would merely wait).
final class SQLiteConnection: Sendable {
    private struct State {
        var handle: SQLiteHandle?
        var cache: [String: SQLiteStatement] = [:]
        var recency: [String] = []
    }

    /// Statements kept prepared per connection.
    static let statementCacheSize = 64

    private let state = Mutex(State())
    let path: String

    init(path: String) {
        self.path = path
    }

    // MARK: Lifecycle

    /// Opens the file (or memory database) and applies the connection settings.
    func open(busyTimeoutMilliseconds: Int32) throws {
        let path = path
        try state.withLock { state in
            var pointer: OpaquePointer?
            let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX
            let result = sqlite3_open_v2(path, &pointer, flags, nil)
            guard let pointer else {
                throw DatabaseError(
                    code: .connectionFailed,
                    message: "cannot open SQLite database '\(path)': out of memory"
                )
            }
            let handle = SQLiteHandle(takingOwnershipOf: pointer)
            guard result == SQLITE_OK else {
                let message = String(cString: sqlite3_errmsg(pointer))
                throw DatabaseError(
                    code: .connectionFailed,
                    message: "cannot open SQLite database '\(path)': \(message); check that the directory exists "
                        + "and is writable by this process"
                )
            }
            sqlite3_extended_result_codes(pointer, 1)
            sqlite3_busy_timeout(pointer, busyTimeoutMilliseconds)
            state.handle = handle
            do {
                if path != ":memory:" {
                    let mode = try Self.run(&state, "PRAGMA journal_mode=WAL", []).first?[0]
                    guard mode == .text("wal") else {
                        throw DatabaseError(
                            code: .connectionFailed,
                            message:
                                "SQLite database '\(path)' cannot use WAL mode (got \(mode?.description ?? "none")); "
                                + "put it on a local file system"
                        )
                    }
                }
                _ = try Self.run(&state, "PRAGMA synchronous=NORMAL", [])
                _ = try Self.run(&state, "PRAGMA foreign_keys=ON", [])
                // Statement journals, sorts and `UPDATE … FROM` tables in memory: on files, a
                // multi-row write beyond 64 KiB of journal created, wrote and unlinked a file in
                // /var/tmp inside the writer's lock (docs/PERFORMANCE.md).
                _ = try Self.run(&state, "PRAGMA temp_store=MEMORY", [])
            } catch {
                state = State()
                throw error
            }
        }
    }

    /// Finalizes cached statements and closes the connection.
    func close() {
        state.withLock { state in
            state.cache = [:]
            state.recency = []
            state.handle = nil
        }
    }

    /// True outside an explicit transaction.
    var isAutocommit: Bool {
        state.withLock { state in
            guard let handle = state.handle else { return true }
            return sqlite3_get_autocommit(handle.pointer) != 0
        }
    }

    // MARK: Statements

    /// Runs one statement and returns its rows and the rows it changed.
    func run(_ sql: String, _ binds: [SQLValue]) throws -> (rows: [SQLRow], changes: Int) {
        try state.withLock { state in
            guard let handle = state.handle else { throw DatabaseError.closed("SQLite") }
            let before = sqlite3_total_changes64(handle.pointer)
            let rows = try Self.run(&state, sql, binds)
            let changed = sqlite3_total_changes64(handle.pointer) != before
            return (rows, changed ? Int(sqlite3_changes64(handle.pointer)) : 0)
        }
    }

    /// Runs `;`-separated statements without binds.
    func runScript(_ sql: String) throws {
        try state.withLock { state in
            guard let handle = state.handle else { throw DatabaseError.closed("SQLite") }
            var errorMessage: UnsafeMutablePointer<CChar>?
            let result = sqlite3_exec(handle.pointer, sql, nil, nil, &errorMessage)
            defer { sqlite3_free(errorMessage) }
            guard result == SQLITE_OK else { throw handle.error(result, sql: sql) }
        }
    }

    private static func run(_ state: inout State, _ sql: String, _ binds: [SQLValue]) throws -> [SQLRow] {
        let statement = try prepare(&state, sql)
        let pointer = statement.pointer
        defer {
            sqlite3_reset(pointer)
            sqlite3_clear_bindings(pointer)
        }
        try bind(binds, to: statement)
        let columnCount = sqlite3_column_count(pointer)
        let columns = (0..<columnCount).map { String(cString: sqlite3_column_name(pointer, $0)) }
        var rows: [SQLRow] = []
        while true {
            let result = sqlite3_step(pointer)
            if result == SQLITE_DONE { break }
            guard result == SQLITE_ROW else { throw statement.handle.error(result, sql: sql) }
            var values: [SQLValue] = []
            values.reserveCapacity(Int(columnCount))
            for column in 0..<columnCount {
                values.append(value(pointer, column))
            }
            rows.append(SQLRow(columns: columns, values: values))
        }
        return rows
    }

    private static func value(_ pointer: OpaquePointer, _ column: Int32) -> SQLValue {
        switch sqlite3_column_type(pointer, column) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(pointer, column))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(pointer, column))
        case SQLITE_TEXT:
            let text = sqlite3_column_text(pointer, column)
            let count = Int(sqlite3_column_bytes(pointer, column))
            guard let text else { return .text("") }
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let blob = sqlite3_column_blob(pointer, column)
            let count = Int(sqlite3_column_bytes(pointer, column))
            guard let blob else { return .blob([]) }
            return .blob([UInt8](UnsafeRawBufferPointer(start: blob, count: count)))
        default:
            return .null
        }
    }

    /// A cached statement for `sql`, or a newly prepared one (cached, evicting the least recent).
    private static func prepare(_ state: inout State, _ sql: String) throws -> SQLiteStatement {
        guard let handle = state.handle else { throw DatabaseError.closed("SQLite") }
        if let cached = state.cache[sql] {
            if state.recency.last != sql, let index = state.recency.firstIndex(of: sql) {
                state.recency.remove(at: index)
                state.recency.append(sql)
            }
            return cached
        }
        var pointer: OpaquePointer?
        var trailing = false
        let result = SQLitePlaceholders.numbered(sql).withCString { text in
            var tail: UnsafePointer<CChar>?
            let result = sqlite3_prepare_v3(
                handle.pointer,
                text,
                -1,
                UInt32(SQLITE_PREPARE_PERSISTENT),
                &pointer,
                &tail
            )
            if result == SQLITE_OK, let tail, tail.pointee != 0 {
                // Comments and whitespace after the statement prepare to nothing; anything else
                // is a second statement that would silently be ignored.
                var next: OpaquePointer?
                if sqlite3_prepare_v2(handle.pointer, tail, -1, &next, nil) != SQLITE_OK || next != nil {
                    trailing = true
                }
                sqlite3_finalize(next)
            }
            return result
        }
        guard result == SQLITE_OK else {
            sqlite3_finalize(pointer)
            throw handle.error(result, sql: sql)
        }
        guard let pointer else {
            throw DatabaseError(code: .queryFailed, message: "the SQL text contains no statement", sql: sql)
        }
        let statement = SQLiteStatement(takingOwnershipOf: pointer, handle: handle, sql: sql)
        guard !trailing else {
            throw DatabaseError(
                code: .queryFailed,
                message: "the SQL text holds more than one statement; run each separately or use executeScript",
                sql: sql
            )
        }
        state.cache[sql] = statement
        state.recency.append(sql)
        if state.recency.count > statementCacheSize {
            let evicted = state.recency.removeFirst()
            state.cache[evicted] = nil
        }
        return statement
    }

    /// Binds `binds[n - 1]` to `$n`, wherever `$n` appears.
    private static func bind(_ binds: [SQLValue], to statement: SQLiteStatement) throws {
        let pointer = statement.pointer
        if let missing = statement.missingPlaceholder {
            throw DatabaseError(
                code: .queryFailed,
                message: "the statement has no placeholder $\(missing); number placeholders $1, $2, … "
                    + "without gaps (not ? or :name)",
                sql: statement.sql
            )
        }
        let count = statement.placeholderCount
        guard count == binds.count else {
            throw DatabaseError(
                code: .queryFailed,
                message: "the statement has \(count) distinct placeholders but \(binds.count) values were bound",
                sql: statement.sql
            )
        }
        for (offset, value) in binds.enumerated() {
            let index = Int32(offset + 1)
            let result: Int32
            switch value {
            case .null:
                result = sqlite3_bind_null(pointer, index)
            case .integer(let integer):
                result = sqlite3_bind_int64(pointer, index, integer)
            case .real(let real):
                result = sqlite3_bind_double(pointer, index, real)
            case .text(var text):
                result = text.withUTF8 { buffer in
                    guard let base = buffer.baseAddress, !buffer.isEmpty else {
                        return sqlite3_bind_text(pointer, index, "", 0, csqlite_transient())
                    }
                    return base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                        sqlite3_bind_text64(
                            pointer,
                            index,
                            $0,
                            UInt64(buffer.count),
                            csqlite_transient(),
                            UInt8(SQLITE_UTF8)
                        )
                    }
                }
            case .blob(let bytes):
                result = bytes.withUnsafeBytes { buffer in
                    guard let base = buffer.baseAddress, !buffer.isEmpty else {
                        return sqlite3_bind_zeroblob(pointer, index, 0)
                    }
                    return sqlite3_bind_blob64(pointer, index, base, UInt64(buffer.count), csqlite_transient())
                }
            }
            guard result == SQLITE_OK else { throw statement.handle.error(result, sql: statement.sql) }
        }
    }
}
