import Foundation

extension JSONValue {
    /// Decodes a `Decodable` type from this value, the way Foundation's JSON decoder with its default
    /// strategies reads the same text: object keys as they are, `Date` as seconds since 2001,
    /// `Data` as Base64, `URL` as a string, and a nested ``JSONValue`` kept as it is. A number
    /// decodes into an integer type when it is integral and fits (`3.0` into `Int` does, `3.5`
    /// and `300` into `Int8` do not), and into `Double` or `Float` whether integral or not. The
    /// grammar keeps integers exactly up to `Int64.max`: a `UInt64` above it, or an integer
    /// written with a fraction or exponent beyond 2^53, throws instead of decoding rounded.
    ///
    /// ```swift
    /// let request = try JSONValue(parsing: bytes).decode(LiveActivityRequest.self)
    /// ```
    ///
    /// - Throws: `DecodingError` with the coding path of the first value that does not fit.
    public func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try JSONValueDecoder(value: self, codingPath: []).unwrap(type)
    }
}

/// The `Decoder` over one ``JSONValue`` and where it sits in the whole.
private struct JSONValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func unwrap<T: Decodable>(_ type: T.Type) throws -> T {
        if type == JSONValue.self { return value as! T }  // A JSONValue member: already what it is.
        if type == Data.self {
            guard let data = Data(base64Encoded: try string()) else {
                throw DecodingError.dataCorrupted(context("the string is not valid Base64"))
            }
            return data as! T
        }
        if type == URL.self {
            guard let url = URL(string: try string()) else {
                throw DecodingError.dataCorrupted(context("the string is not a valid URL"))
            }
            return url as! T
        }
        return try T(from: self)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else { throw mismatch([String: JSONValue].self, "an object") }
        return KeyedDecodingContainer(JSONValueKeyedContainer<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value else { throw mismatch([JSONValue].self, "an array") }
        return JSONValueUnkeyedContainer(items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func context(_ description: String) -> DecodingError.Context {
        DecodingError.Context(codingPath: codingPath, debugDescription: description)
    }

    func mismatch(_ type: Any.Type, _ expected: String) -> DecodingError {
        let found =
            switch value {
            case .null: "null"
            case .bool: "a boolean"
            case .integer, .double: "a number"
            case .string: "a string"
            case .array: "an array"
            case .object: "an object"
            }
        let context = context("expected \(expected), found \(found)")
        return value == .null ? .valueNotFound(type, context) : .typeMismatch(type, context)
    }

    func string() throws -> String {
        guard case .string(let text) = value else { throw mismatch(String.self, "a string") }
        return text
    }

    func bool() throws -> Bool {
        guard case .bool(let flag) = value else { throw mismatch(Bool.self, "a boolean") }
        return flag
    }

    func double() throws -> Double {
        switch value {
        case .integer(let number): return Double(number)
        case .double(let number): return number
        default: throw mismatch(Double.self, "a number")
        }
    }

    func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        let number: String
        switch value {
        case .integer(let integer):
            if let fitting = I(exactly: integer) { return fitting }
            number = "\(integer)"
        case .double(let double):
            // Beyond 2^53 a double no longer tells which integer the text had: refused, not rounded.
            if double.magnitude < 0x1p53, let fitting = I(exactly: double) { return fitting }
            number = "\(double)"
        default:
            throw mismatch(type, "a number")
        }
        throw DecodingError.dataCorrupted(context("the number \(number) does not fit in \(type)"))
    }
}

extension JSONValueDecoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try bool() }
    func decode(_ type: String.Type) throws -> String { try string() }
    func decode(_ type: Double.Type) throws -> Double { try double() }

    func decode(_ type: Float.Type) throws -> Float {
        let number = try double()
        guard number.magnitude <= Double(Float.greatestFiniteMagnitude) else {
            throw DecodingError.dataCorrupted(context("the number \(number) does not fit in Float"))
        }
        return Float(number)
    }

    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try unwrap(type) }
}

/// An array's position as a coding key (`Index 3`), as Foundation's JSON decoder names it.
private struct JSONIndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }

    init(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

private struct JSONValueKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func decoder(_ key: any CodingKey) throws -> JSONValueDecoder {
        guard let value = members[key.stringValue] else {
            let description = "no value for the key \"\(key.stringValue)\""
            throw DecodingError.keyNotFound(
                key,
                DecodingError.Context(codingPath: codingPath, debugDescription: description)
            )
        }
        return JSONValueDecoder(value: value, codingPath: codingPath + [key])
    }

    func decodeNil(forKey key: Key) throws -> Bool { try decoder(key).decodeNil() }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decoder(key).bool() }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try decoder(key).string() }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decoder(key).double() }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decoder(key).decode(type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decoder(key).integer(type) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decoder(key).integer(type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decoder(key).integer(type) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decoder(key).integer(type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decoder(key).integer(type) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decoder(key).integer(type) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decoder(key).integer(type) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decoder(key).integer(type) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decoder(key).integer(type) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decoder(key).integer(type) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decoder(key).unwrap(type) }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type,
        forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try decoder(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try decoder(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        JSONValueDecoder(value: members["super"] ?? .null, codingPath: codingPath + [JSONSuperKey()])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        JSONValueDecoder(value: members[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

/// The key `super`, for ``JSONValueKeyedContainer/superDecoder()``.
private struct JSONSuperKey: CodingKey {
    var stringValue: String { "super" }
    var intValue: Int? { nil }

    init() {}
    init?(stringValue: String) { nil }
    init?(intValue: Int) { nil }
}

private struct JSONValueUnkeyedContainer: UnkeyedDecodingContainer {
    let items: [JSONValue]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(items: [JSONValue], codingPath: [any CodingKey]) {
        self.items = items
        self.codingPath = codingPath
    }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    /// The decoder of the current item; `next` moves past it once it decoded.
    private func current(_ type: Any.Type) throws -> JSONValueDecoder {
        let key = JSONIndexKey(intValue: currentIndex)
        guard !isAtEnd else {
            let context = DecodingError.Context(codingPath: codingPath + [key], debugDescription: "the array has ended")
            throw DecodingError.valueNotFound(type, context)
        }
        return JSONValueDecoder(value: items[currentIndex], codingPath: codingPath + [key])
    }

    private mutating func next<T>(_ type: T.Type, _ read: (JSONValueDecoder) throws -> T) throws -> T {
        let value = try read(try current(type))
        currentIndex += 1
        return value
    }

    mutating func decodeNil() throws -> Bool {
        guard try current(Any?.self).decodeNil() else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type) { try $0.bool() } }
    mutating func decode(_ type: String.Type) throws -> String { try next(type) { try $0.string() } }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type) { try $0.double() } }
    mutating func decode(_ type: Float.Type) throws -> Float { try next(type) { try $0.decode(type) } }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(type) { try $0.integer(type) } }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(type) { try $0.integer(type) } }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(type) { try $0.integer(type) } }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(type) { try $0.integer(type) } }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(type) { try $0.integer(type) } }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next(type) { try $0.integer(type) } }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(type) { try $0.integer(type) } }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(type) { try $0.integer(type) } }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(type) { try $0.integer(type) } }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(type) { try $0.integer(type) } }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(type) { try $0.unwrap(type) } }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try next(KeyedDecodingContainer<NestedKey>.self) { try $0.container(keyedBy: type) }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next((any UnkeyedDecodingContainer).self) { try $0.unkeyedContainer() }
    }

    mutating func superDecoder() throws -> any Decoder {
        try next((any Decoder).self) { $0 }
    }
}
