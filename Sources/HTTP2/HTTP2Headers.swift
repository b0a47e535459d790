/// One header field. Names are lowercase on the wire; ``HTTP2Headers`` lowercases ASCII names
/// when they are sent.
public struct HTTP2Header: Sendable, Hashable {
    public var name: String
    public var value: String
    /// Send as "literal never indexed" (HPACK, `NGHTTP2_NV_FLAG_NO_INDEX`): for values unique per
    /// request (`apns-id`) or secret, which must not fill the peer's small dynamic table.
    public var neverIndex: Bool

    public init(name: String, value: String, neverIndex: Bool = false) {
        self.name = name
        self.value = value
        self.neverIndex = neverIndex
    }
}

/// An ordered list of header fields; duplicates are kept.
///
/// ```swift
/// var headers: HTTP2Headers = ["apns-topic": "com.example.app", "apns-push-type": "alert"]
/// headers.add(name: "apns-id", value: id, neverIndex: true)
/// headers["apns-topic"]   // "com.example.app"
/// ```
public struct HTTP2Headers: Sendable, Hashable, RandomAccessCollection, ExpressibleByDictionaryLiteral {
    private var fields: [HTTP2Header]

    public init() { fields = [] }

    public init(_ fields: [HTTP2Header]) { self.fields = fields }

    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { HTTP2Header(name: $0.0, value: $0.1) }
    }

    public var startIndex: Int { fields.startIndex }
    public var endIndex: Int { fields.endIndex }
    public subscript(position: Int) -> HTTP2Header { fields[position] }

    /// Appends a field (a duplicate name adds another field).
    public mutating func add(name: String, value: String, neverIndex: Bool = false) {
        fields.append(HTTP2Header(name: name, value: value, neverIndex: neverIndex))
    }

    /// Appends a field.
    public mutating func add(_ field: HTTP2Header) {
        fields.append(field)
    }

    /// Removes every field named `name` (ASCII case-insensitive).
    public mutating func remove(name: String) {
        fields.removeAll { Self.equalNames($0.name, name) }
    }

    /// Reserves room for `count` fields.
    public mutating func reserveCapacity(_ count: Int) {
        fields.reserveCapacity(count)
    }

    /// The first value of `name` (ASCII case-insensitive), or nil.
    public subscript(name: String) -> String? {
        fields.first { Self.equalNames($0.name, name) }?.value
    }

    /// Every value of `name` in order.
    public func values(for name: String) -> [String] {
        fields.filter { Self.equalNames($0.name, name) }.map(\.value)
    }

    static func equalNames(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.count == rhs.utf8.count && lhs.utf8.elementsEqual(rhs.utf8) { asciiLower($0) == asciiLower($1) }
    }

    private static func asciiLower(_ byte: UInt8) -> UInt8 {
        byte >= 65 && byte <= 90 ? byte | 0x20 : byte
    }
}
