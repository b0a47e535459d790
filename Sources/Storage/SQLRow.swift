public import Foundation
import HeraldCore

/// One result row: column names and values in the order of the select list.
///
/// Look-ups by name try an exact match first, then a case-insensitive one, because PostgreSQL
/// folds unquoted names to lower case and SQLite keeps them as written. Give computed columns an
/// alias (`SELECT count(*) AS n`): the two databases name them differently.
///
/// PostgreSQL values arrive as: `int2`/`int4`/`int8`/`oid` → ``SQLValue/integer(_:)``,
/// `float4`/`float8`/`numeric` → ``SQLValue/real(_:)``, `bool` → ``SQLValue/integer(_:)`` 0 or 1,
/// `bytea` → ``SQLValue/blob(_:)``, anything else (text, varchar, uuid, json, timestamps) →
/// ``SQLValue/text(_:)`` in PostgreSQL's text output.
///
/// The typed accessors throw a ``DatabaseError`` naming the column and the type found.
public struct SQLRow: Sendable {
    /// Column names, in order.
    public let columns: [String]
    /// Values, in the order of ``columns``.
    public let values: [SQLValue]

    public init(columns: [String], values: [SQLValue]) {
        precondition(columns.count == values.count, "SQLRow needs one value per column")
        self.columns = columns
        self.values = values
    }

    /// The value of `column`, or ``SQLValue/null`` when there is no such column.
    public subscript(column: String) -> SQLValue {
        guard let index = index(of: column) else { return .null }
        return values[index]
    }

    /// The value at a zero-based position.
    public subscript(index: Int) -> SQLValue {
        values[index]
    }

    /// Whether the row has `column` (exact or case-insensitive match).
    public func contains(_ column: String) -> Bool {
        index(of: column) != nil
    }

    private func index(of column: String) -> Int? {
        if let exact = columns.firstIndex(of: column) { return exact }
        let lowered = column.lowercased()
        return columns.firstIndex { $0.lowercased() == lowered }
    }

    // MARK: Typed accessors

    /// An integer. A real with an integral value (PostgreSQL `numeric` sums) is accepted.
    public func int(_ column: String) throws -> Int64 {
        try required(column, optionalInt(column))
    }

    public func optionalInt(_ column: String) throws -> Int64? {
        switch try value(column) {
        case .null: return nil
        case .integer(let value): return value
        case .real(let value):
            guard value.rounded() == value, let exact = Int64(exactly: value) else {
                throw mismatch(column, expected: "an integer", found: .real(value))
            }
            return exact
        case let other: throw mismatch(column, expected: "an integer", found: other)
        }
    }

    /// A floating-point number; integers are converted.
    public func double(_ column: String) throws -> Double {
        try required(column, optionalDouble(column))
    }

    public func optionalDouble(_ column: String) throws -> Double? {
        switch try value(column) {
        case .null: return nil
        case .real(let value): return value
        case .integer(let value): return Double(value)
        case let other: throw mismatch(column, expected: "a number", found: other)
        }
    }

    /// Text.
    public func string(_ column: String) throws -> String {
        try required(column, optionalString(column))
    }

    public func optionalString(_ column: String) throws -> String? {
        switch try value(column) {
        case .null: return nil
        case .text(let value): return value
        case let other: throw mismatch(column, expected: "text", found: other)
        }
    }

    /// Bytes of a blob (`BLOB` / `bytea`).
    public func bytes(_ column: String) throws -> [UInt8] {
        try required(column, optionalBytes(column))
    }

    public func optionalBytes(_ column: String) throws -> [UInt8]? {
        switch try value(column) {
        case .null: return nil
        case .blob(let value): return value
        case let other: throw mismatch(column, expected: "a blob", found: other)
        }
    }

    /// A boolean stored as integer 0 or 1 (or PostgreSQL `BOOLEAN`).
    public func bool(_ column: String) throws -> Bool {
        try required(column, optionalBool(column))
    }

    public func optionalBool(_ column: String) throws -> Bool? {
        switch try value(column) {
        case .null: return nil
        case .integer(let value) where value == 0 || value == 1: return value == 1
        case let other: throw mismatch(column, expected: "a boolean (0 or 1)", found: other)
        }
    }

    /// A time stored as integer milliseconds since 1970 (see ``SQLValue/init(_:)-(Date)``).
    public func date(_ column: String) throws -> Date {
        try required(column, optionalDate(column))
    }

    public func optionalDate(_ column: String) throws -> Date? {
        guard let milliseconds = try optionalInt(column) else { return nil }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// A UUID stored as text.
    public func uuid(_ column: String) throws -> UUID {
        try required(column, optionalUUID(column))
    }

    public func optionalUUID(_ column: String) throws -> UUID? {
        guard let text = try optionalString(column) else { return nil }
        guard let uuid = RequestIdentifier.uuid(text) else {
            throw DatabaseError(
                code: .typeMismatch,
                message: "column '\(column)' holds text that is not a UUID; store ids with SQLValue(UUID)"
            )
        }
        return uuid
    }

    // MARK: Helpers

    private func value(_ column: String) throws -> SQLValue {
        guard let index = index(of: column) else {
            let known = columns.joined(separator: ", ")
            throw DatabaseError(
                code: .typeMismatch,
                message: "the result has no column '\(column)' (columns: \(known)); check the select list or alias"
            )
        }
        return values[index]
    }

    private func required<T>(_ column: String, _ value: T?) throws -> T {
        guard let value else {
            throw DatabaseError(
                code: .typeMismatch,
                message: "column '\(column)' is NULL; read it with the optional accessor or make it NOT NULL"
            )
        }
        return value
    }

    private func mismatch(_ column: String, expected: String, found: SQLValue) -> DatabaseError {
        DatabaseError(
            code: .typeMismatch,
            message: "column '\(column)' holds \(found.typeName), expected \(expected)"
        )
    }
}
