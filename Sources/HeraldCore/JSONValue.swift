public import Foundation

/// Any JSON value: the one value every JSON text in Herald is read into (request bodies, APNs
/// payloads, key files) and the one APNs payloads are written from (``jsonBytes()``). Read with
/// ``parse(_:maximumDepth:)``, the one strict grammar.
///
/// Numbers keep the difference between integers and fractions (`1` stays `1`, `1.5` stays `1.5`);
/// integers beyond 64 bits become doubles.
///
/// ```swift
/// let state: JSONValue = ["score": 3, "team": "Lions", "final": false]
/// ```
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Parses JSON text with ``parse(_:maximumDepth:)``, nesting at most ``payloadMaximumDepth`` deep.
    ///
    /// - Throws: `DecodingError` when `bytes` is not valid JSON (its description is the fault's).
    public init(parsing bytes: [UInt8]) throws {
        do {
            self = try Self.parse(bytes, maximumDepth: Self.payloadMaximumDepth)
        } catch {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: [], debugDescription: "not valid JSON: \(error.description)")
            )
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The members when this is an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The string when this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The number when this is one, as a double (an integer beyond 2^53 rounded to the nearest).
    public var numberValue: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }

    /// The member `key` when this is an object that has it.
    public subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension JSONValue {
    /// The text, or `null` without one: how the API shows an optional member.
    public init(_ text: String?) {
        self = text.map(JSONValue.string) ?? .null
    }

    /// The time as the API writes it (RFC 3339, UTC, as ``RFC3339/string(from:fractional:)``
    /// writes it), or `null` without one.
    public init(_ date: Date?) {
        self = date.map { .string(RFC3339.string(from: $0)) } ?? .null
    }
}

/// A member name chosen at run time, for `Encodable` bodies whose keys are not a fixed enum (a
/// page's items under its name, a body's members taken from a ``JSONValue``).
public struct JSONMemberKey: CodingKey, Sendable {
    public var stringValue: String
    public var intValue: Int? { nil }

    public init(_ name: String) { stringValue = name }
    public init(stringValue: String) { self.stringValue = stringValue }
    public init?(intValue: Int) { nil }
}
