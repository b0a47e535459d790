public import Foundation
import HeraldCore

/// A value bound to a `$n` placeholder or read from a result column.
///
/// The cases are SQLite's storage classes; PostgreSQL values are mapped onto them (see
/// ``SQLRow``). Herald's conventions, identical in both dialects:
///
/// - times are ``integer(_:)`` milliseconds since 1970 (`BIGINT` columns): ``init(_:)-(Date)``;
/// - booleans are ``integer(_:)`` 0 or 1: ``bool(_:)``; a PostgreSQL `BOOLEAN` column accepts them;
/// - UUIDs are lowercase ``text(_:)``: ``init(_:)-(UUID)``.
///
/// ```swift
/// try await db.execute("INSERT INTO kv_settings (key, value, updated_at) VALUES ($1, $2, $3)",
///                      ["greeting", "hello", SQLValue(Date())])
/// ```
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

extension SQLValue {
    /// Milliseconds since 1970, rounded to the nearest millisecond; a date beyond `Int64`
    /// milliseconds is stored as the nearest bound instead of trapping.
    public init(_ date: Date) {
        self = .integer(EpochTime.milliseconds(date))
    }

    /// The UUID's lowercase string form.
    public init(_ uuid: UUID) {
        self = .text(RequestIdentifier.lowercaseString(uuid))
    }

    public init(_ value: Int) { self = .integer(Int64(value)) }
    public init(_ value: Int64) { self = .integer(value) }
    public init(_ value: Int32) { self = .integer(Int64(value)) }
    public init(_ value: Double) { self = .real(value) }
    public init(_ value: String) { self = .text(value) }
    public init(_ value: [UInt8]) { self = .blob(value) }
    public init(_ value: Data) { self = .blob([UInt8](value)) }
    public init(_ value: Bool) { self = .integer(value ? 1 : 0) }

    /// `1` or `0`.
    public static func bool(_ value: Bool) -> SQLValue { .integer(value ? 1 : 0) }

    /// ``null`` for `nil`, otherwise ``text(_:)``.
    public init(_ value: String?) { self = value.map(SQLValue.text) ?? .null }
    /// ``null`` for `nil`, otherwise ``integer(_:)``.
    public init(_ value: Int64?) { self = value.map(SQLValue.integer) ?? .null }
    /// ``null`` for `nil`, otherwise ``integer(_:)``.
    public init(_ value: Int?) { self = value.map { .integer(Int64($0)) } ?? .null }
    /// ``null`` for `nil`, otherwise milliseconds since 1970.
    public init(_ value: Date?) { self = value.map { SQLValue($0) } ?? .null }
    /// ``null`` for `nil`, otherwise the lowercase UUID string.
    public init(_ value: UUID?) { self = value.map { SQLValue($0) } ?? .null }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The storage class's name, for error messages.
    var typeName: String {
        switch self {
        case .null: "null"
        case .integer: "integer"
        case .real: "real"
        case .text: "text"
        case .blob: "blob"
        }
    }
}

extension SQLValue: ExpressibleByNilLiteral {
    public init(nilLiteral: ()) { self = .null }
}

extension SQLValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int64) { self = .integer(value) }
}

extension SQLValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .real(value) }
}

extension SQLValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
}

extension SQLValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}

extension SQLValue: CustomStringConvertible {
    /// A short rendering for debugging that never prints contents of text or blobs (they may be
    /// tokens or keys): `text(12 bytes)`.
    public var description: String {
        switch self {
        case .null: "null"
        case .integer(let value): "integer(\(value))"
        case .real(let value): "real(\(value))"
        case .text(let value): "text(\(value.utf8.count) bytes)"
        case .blob(let value): "blob(\(value.count) bytes)"
        }
    }
}
