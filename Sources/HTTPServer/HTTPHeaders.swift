import HeraldCore

/// HTTP header fields in the order they were received or added, with case-insensitive lookup.
///
/// Names keep the spelling they were given; comparisons ignore ASCII case, as RFC 9110 asks.
///
/// ```swift
/// var headers = HTTPHeaders([("Content-Type", "application/json")])
/// headers.add(name: "Vary", value: "Accept")
/// headers["content-type"]  // "application/json"
/// ```
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    public typealias Element = (name: String, value: String)

    private var fields: [Element]

    /// No fields.
    public init() {
        self.fields = []
    }

    /// The given fields, in order; repeated names are kept.
    public init(_ pairs: [(String, String)]) {
        self.fields = pairs.map { (name: $0.0, value: $0.1) }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// The first value for `name`, compared without regard to case; `nil` when absent.
    public subscript(name: String) -> String? {
        fields.first { $0.name.equalsIgnoringASCIICase(name) }?.value
    }

    /// Every value for `name`, in order.
    public func values(for name: String) -> [String] {
        fields.filter { $0.name.equalsIgnoringASCIICase(name) }.map(\.value)
    }

    /// Whether a field called `name` is present.
    public func contains(name: String) -> Bool {
        fields.contains { $0.name.equalsIgnoringASCIICase(name) }
    }

    /// Appends a field, keeping any with the same name.
    public mutating func add(name: String, value: String) {
        fields.append((name: name, value: value))
    }

    /// Sets the value of the first field called `name` and removes the others; appends the field
    /// when there is none.
    public mutating func replaceOrAdd(name: String, value: String) {
        guard let first = fields.firstIndex(where: { $0.name.equalsIgnoringASCIICase(name) }) else {
            fields.append((name: name, value: value))
            return
        }
        fields[first] = (name: name, value: value)
        var index = fields.index(after: first)
        while index < fields.endIndex {
            if fields[index].name.equalsIgnoringASCIICase(name) {
                fields.remove(at: index)
            } else {
                index = fields.index(after: index)
            }
        }
    }

    /// Removes every field called `name`.
    public mutating func remove(name: String) {
        fields.removeAll { $0.name.equalsIgnoringASCIICase(name) }
    }

    /// The number of fields, repeated names counted each time.
    public var count: Int { fields.count }

    public var isEmpty: Bool { fields.isEmpty }

    public func makeIterator() -> IndexingIterator<[Element]> {
        fields.makeIterator()
    }

    /// One `Name: value` line per field; credentials (`Authorization`, cookies, API keys) are
    /// shown as `<redacted>`.
    public var description: String {
        fields.map { field in
            let redacted = Self.sensitiveNames.contains { $0.equalsIgnoringASCIICase(field.name) }
            return "\(field.name): \(redacted ? "<redacted>" : field.value)"
        }
        .joined(separator: "\n")
    }

    private static let sensitiveNames = [
        "Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-API-Key",
    ]
}
