extension JSONValue {
    /// The value as compact JSON, written directly: what `JSONEncoder` writes with sorted keys and
    /// unescaped slashes (strings escaped as ``JSONText`` says), without its generic
    /// machinery, except that an integral double keeps its `.0`: what is written reads back equal.
    ///
    /// - Throws: ``JSONWritingError`` for a double that is not finite (JSON has no such number).
    public func jsonBytes() throws(JSONWritingError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        try write(to: &out)
        return out
    }

    /// Appends the value as compact JSON with sorted keys to `out`.
    public func write(to out: inout [UInt8]) throws(JSONWritingError) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
        case .integer(let value): out.append(contentsOf: String(value).utf8)
        case .double(let value):
            guard value.isFinite else { throw JSONWritingError(value: value) }
            // Swift's shortest form that reads back the same double ("5.0", "1e+20"): unlike
            // JSONEncoder, an integral double keeps its ".0", so it reads back a double.
            out.append(contentsOf: value.description.utf8)
        case .string(let value): JSONText.append(quoted: value, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (position, item) in items.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                try item.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (position, key) in members.keys.sorted().enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                JSONText.append(quoted: key, to: &out)
                out.append(UInt8(ascii: ":"))
                try members[key]?.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// The body of a push whose payload is this value.
    public func encodedPayload() throws -> [UInt8] {
        try jsonBytes()
    }
}

/// A double that JSON cannot carry (infinite or not a number).
public struct JSONWritingError: Error, Sendable, Hashable, CustomStringConvertible {
    public var value: Double

    public var description: String { "\(value) cannot be written as JSON: use a finite number" }
}
