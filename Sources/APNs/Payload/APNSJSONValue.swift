import Foundation

/// Any JSON value, for the parts of a payload whose shape belongs to the app rather than to Apple:
/// custom top-level keys, a Live Activity's `content-state` and `attributes`.
///
/// Numbers keep the difference between integers and fractions (`1` stays `1`, `1.5` stays `1.5`);
/// integers beyond 64 bits become doubles.
///
/// ```swift
/// let state: APNSJSONValue = ["score": 3, "team": "Lions", "final": false]
/// ```
public enum APNSJSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([APNSJSONValue])
    case object([String: APNSJSONValue])

    /// Parses JSON text, strictly (RFC 8259: no trailing commas, no comments, nesting at most 64 deep),
    /// in one pass over the bytes (``APNSJSONParser``).
    ///
    /// - Throws: `DecodingError` when `bytes` is not valid JSON.
    public init(parsing bytes: [UInt8]) throws {
        guard let value = APNSJSONParser.parse(bytes) else {
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: [], debugDescription: "not valid JSON"))
        }
        self = value
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
        } else if let value = try? container.decode([APNSJSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: APNSJSONValue].self))
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
    public var objectValue: [String: APNSJSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The string when this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The member `key` when this is an object that has it.
    public subscript(key: String) -> APNSJSONValue? {
        objectValue?[key]
    }
}

extension APNSJSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: APNSJSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, APNSJSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
