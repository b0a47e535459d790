import Foundation
import HeraldCore

/// Something that produces the JSON body of a push.
///
/// `Encodable` payloads get ``encodedPayload()`` for free: compact JSON with keys sorted, so the
/// same payload always gives the same bytes (golden tests, and payload sizes that do not vary).
public protocol APNSPayload: Sendable {
    /// The body exactly as it will be sent.
    func encodedPayload() throws -> [UInt8]
}

extension APNSPayload where Self: Encodable {
    public func encodedPayload() throws -> [UInt8] {
        try APNSPayloadEncoding.encode(self)
    }
}

extension APNSJSONValue: APNSPayload {}  // encodedPayload() in APNSJSONValue+Writing.swift

/// A body passed through byte for byte, for callers that build their own JSON. It is still
/// checked (a JSON object, within the size limit) when the request is validated.
public struct APNSRawPayload: APNSPayload, Hashable {
    public var bytes: [UInt8]

    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    public init(_ text: String) {
        self.bytes = Array(text.utf8)
    }

    public func encodedPayload() throws -> [UInt8] { bytes }
}

/// The encoder settings every payload uses.
enum APNSPayloadEncoding {
    static func encode(_ value: some Encodable) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }

    /// A number as `JSONEncoder` writes a `Double`: a whole one without a fraction.
    static func number(_ value: Double) -> APNSJSONValue {
        value == value.rounded() && abs(value) < 9.0e15 ? .integer(Int64(value)) : .double(value)
    }

    /// The error `encodeCustomKeys` throws for a custom key named `aps`.
    static func customKeyNamedAPS(_ value: APNSJSONValue) -> EncodingError {
        EncodingError.invalidValue(
            value,
            EncodingError.Context(
                codingPath: [APNSDynamicKey("aps")],
                debugDescription: "a custom key may not be named aps: Apple's keys go in the typed fields"
            )
        )
    }

    /// Seconds since 1970, rounded down: how Apple's payloads carry times.
    static func epochSeconds(_ date: Date) -> Int64 {
        APNSExpiration.epochSeconds(date)
    }
}

/// A coding key for keys known only at run time (custom payload keys).
struct APNSDynamicKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }

    init(_ string: String) {
        self.stringValue = string
    }

    init?(stringValue: String) {
        self.stringValue = stringValue
    }

    init?(intValue: Int) {
        return nil
    }
}

extension KeyedEncodingContainer where Key == APNSDynamicKey {
    /// Writes `custom` beside `aps`; a custom key named `aps` is refused, because it would replace
    /// the dictionary Apple reads.
    mutating func encodeCustomKeys(_ custom: [String: APNSJSONValue]) throws {
        for (key, value) in custom {
            guard key != "aps" else { throw APNSPayloadEncoding.customKeyNamedAPS(value) }
            try encode(value, forKey: APNSDynamicKey(key))
        }
    }
}
