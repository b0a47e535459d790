import CSQLite

/// Owns one `sqlite3*` and closes it in `deinit`.
///
/// Not `Sendable`: it lives inside ``SQLiteConnection``'s mutex and is touched only by the
/// connection's executor thread. `sqlite3_close_v2` defers the close until the last statement is
/// finalized; statements also keep their handle alive, so the order of deinits does not matter.
final class SQLiteHandle {
    let pointer: OpaquePointer

    init(takingOwnershipOf pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        sqlite3_close_v2(pointer)
    }

    /// The most recent error on this connection as a ``DatabaseError``.
    func error(_ resultCode: Int32, sql: String?) -> DatabaseError {
        let extended = sqlite3_extended_errcode(pointer)
        let message = String(cString: sqlite3_errmsg(pointer))
        return SQLiteErrorMapping.error(resultCode: resultCode, extendedCode: extended, message: message, sql: sql)
    }
}

/// Owns one prepared `sqlite3_stmt*` and finalizes it in `deinit`; keeps its connection alive.
final class SQLiteStatement {
    let pointer: OpaquePointer
    let handle: SQLiteHandle
    let sql: String
    /// The highest placeholder number in the statement; the binds fill `1…placeholderCount`.
    let placeholderCount: Int
    /// The lowest number up to ``placeholderCount`` that is not a `$n` placeholder of the statement
    /// (a gap, or a `?` or `:name` placeholder), or nil when there is none.
    let missingPlaceholder: Int?

    /// Takes a statement prepared from ``SQLitePlaceholders/numbered(_:)``'s text, whose
    /// placeholders are `?n`: index n, named `"?n"`.
    init(takingOwnershipOf pointer: OpaquePointer, handle: SQLiteHandle, sql: String) {
        self.pointer = pointer
        self.handle = handle
        self.sql = sql
        let count = Int(sqlite3_bind_parameter_count(pointer))
        self.placeholderCount = count
        self.missingPlaceholder =
            count == 0
            ? nil
            : (1...count).first { number in
                guard let name = sqlite3_bind_parameter_name(pointer, Int32(number)) else { return true }
                return String(cString: name) != "?\(number)"
            }
    }

    deinit {
        sqlite3_finalize(pointer)
    }
}

/// SQLite result codes → ``DatabaseError`` codes and SQLSTATE equivalents.
enum SQLiteErrorMapping {
    // Extended result codes (sqlite3.h builds them with macros Swift cannot import).
    static let constraintCheck: Int32 = 275  // SQLITE_CONSTRAINT_CHECK
    static let constraintForeignKey: Int32 = 787  // SQLITE_CONSTRAINT_FOREIGNKEY
    static let constraintNotNull: Int32 = 1299  // SQLITE_CONSTRAINT_NOTNULL
    static let constraintPrimaryKey: Int32 = 1555  // SQLITE_CONSTRAINT_PRIMARYKEY
    static let constraintUnique: Int32 = 2067  // SQLITE_CONSTRAINT_UNIQUE

    static func error(resultCode: Int32, extendedCode: Int32, message: String, sql: String?) -> DatabaseError {
        let primary = resultCode & 0xff
        switch primary {
        case SQLITE_CONSTRAINT:
            switch extendedCode {
            case constraintUnique, constraintPrimaryKey:
                return DatabaseError(code: .uniqueViolation, message: message, sqlState: "23505", sql: sql)
            case constraintForeignKey:
                return DatabaseError(code: .constraintViolation, message: message, sqlState: "23503", sql: sql)
            case constraintNotNull:
                return DatabaseError(code: .constraintViolation, message: message, sqlState: "23502", sql: sql)
            case constraintCheck:
                return DatabaseError(code: .constraintViolation, message: message, sqlState: "23514", sql: sql)
            default:
                return DatabaseError(code: .constraintViolation, message: message, sqlState: "23000", sql: sql)
            }
        case SQLITE_BUSY, SQLITE_LOCKED:
            return DatabaseError(
                code: .lockTimeout,
                message: "\(message): another connection or process held the database lock past the busy timeout",
                sql: sql
            )
        case SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_NOTADB:
            return DatabaseError(code: .connectionFailed, message: message, sql: sql)
        default:
            return DatabaseError(code: .queryFailed, message: "\(message) (SQLite code \(extendedCode))", sql: sql)
        }
    }
}
