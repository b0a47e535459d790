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
///
/// The fields live in one byte buffer, each as its name's and value's lengths followed by their
/// bytes: a request's headers cost one allocation however many fields it has, lookups compare
/// bytes in place, and copying or releasing the headers touches one buffer instead of two
/// strings per field. A field becomes a `String` only when it is read.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    public typealias Element = (name: String, value: String)

    /// `[UInt16 name length][UInt32 value length][name][value]` per field, in order.
    private var storage: [UInt8]
    /// The number of fields, repeated names counted each time.
    public private(set) var count: Int

    /// Bytes before a field's name: its name's and its value's lengths.
    private static let recordHeader = 6

    /// No fields.
    public init() {
        self.storage = []
        self.count = 0
    }

    /// Room for `capacity` fields of `byteCount` name and value bytes in all, so that adding
    /// them one by one does not grow the storage again and again.
    public init(minimumCapacity capacity: Int, byteCount: Int = 0) {
        self.init()
        storage.reserveCapacity(capacity * Self.recordHeader + byteCount)
    }

    /// The given fields, in order; repeated names are kept.
    public init(_ pairs: [(String, String)]) {
        self.init(minimumCapacity: pairs.count, byteCount: pairs.count * 24)
        for (name, value) in pairs { add(name: name, value: value) }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// The first value for `name`, compared without regard to case; `nil` when absent.
    public subscript(name: String) -> String? {
        firstRecord(named: name, from: 0).map { value(of: $0) }
    }

    /// Every value for `name`, in order.
    public func values(for name: String) -> [String] {
        var values: [String] = []
        var next = firstRecord(named: name, from: 0)
        while let record = next {
            values.append(value(of: record))
            next = firstRecord(named: name, from: end(of: record))
        }
        return values
    }

    /// The value of the only field called `name`: `.none` when there is none, `.several` when the
    /// name is repeated (for a header that must appear once, such as `Content-Encoding`).
    public func single(_ name: String) -> SingleValue {
        guard let first = firstRecord(named: name, from: 0) else { return .none }
        guard firstRecord(named: name, from: end(of: first)) == nil else { return .several }
        return .one(value(of: first))
    }

    /// What ``single(_:)`` found.
    public enum SingleValue: Sendable, Equatable {
        case none
        case one(String)
        case several
    }

    /// Whether a field called `name` is present.
    public func contains(name: String) -> Bool {
        firstRecord(named: name, from: 0) != nil
    }

    /// Appends a field, keeping any with the same name.
    public mutating func add(name: String, value: String) {
        // In place when the strings are contiguous (native and small ones): `withUTF8` on a copy
        // would allocate a native copy of every small string.
        let added: Bool? = name.utf8.withContiguousStorageIfAvailable { name in
            value.utf8.withContiguousStorageIfAvailable { value in add(name: name, value: value) } != nil
        }
        if added == true { return }
        Array(name.utf8).withUnsafeBufferPointer { name in
            Array(value.utf8).withUnsafeBufferPointer { add(name: name, value: $0) }
        }
    }

    /// Appends a field from its bytes as received. Invalid UTF-8 is kept as it came and
    /// repaired (each bad sequence read as U+FFFD) when the field is read as a `String`.
    ///
    /// - Precondition: the name is shorter than 64 KiB and the value than 4 GiB.
    public mutating func add(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        precondition(name.count <= Int(UInt16.max) && value.count <= Int(UInt32.max), "header field too large")
        // One allocation for the whole field: appending its four parts to a small array would
        // grow it up to three times (a response's first field, such as `X-Request-Id`, did).
        let needed = storage.count + Self.recordHeader + name.count + value.count
        if needed > storage.capacity { storage.reserveCapacity(Swift.max(needed, 2 * storage.capacity)) }
        withUnsafeBytes(of: UInt16(name.count).littleEndian) { storage.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt32(value.count).littleEndian) { storage.append(contentsOf: $0) }
        storage.append(contentsOf: name)
        storage.append(contentsOf: value)
        count += 1
    }

    /// Sets the value of the first field called `name` and removes the others; appends the field
    /// when there is none.
    public mutating func replaceOrAdd(name: String, value: String) {
        guard let first = firstRecord(named: name, from: 0) else {
            add(name: name, value: value)
            return
        }
        var rebuilt = HTTPHeaders(minimumCapacity: count, byteCount: storage.count + value.utf8.count)
        forEachRecord { record in
            if record == first {
                rebuilt.add(name: name, value: value)
            } else if !nameEquals(record, name) {
                rebuilt.copyRecord(record, of: self)
            }
        }
        self = rebuilt
    }

    /// Removes every field called `name`.
    public mutating func remove(name: String) {
        guard firstRecord(named: name, from: 0) != nil else { return }
        var rebuilt = HTTPHeaders(minimumCapacity: count, byteCount: storage.count)
        forEachRecord { record in
            if !nameEquals(record, name) { rebuilt.copyRecord(record, of: self) }
        }
        self = rebuilt
    }

    public var isEmpty: Bool { count == 0 }

    /// Calls `body` with each field's name and value bytes, in order (valid during the call only).
    package func forEachField(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) {
        storage.withUnsafeBufferPointer { storage in
            var record = 0
            while record < storage.count {
                let (name, value) = Self.lengths(of: record, in: storage)
                let start = record + Self.recordHeader
                body(
                    UnsafeBufferPointer(rebasing: storage[start..<start + name]),
                    UnsafeBufferPointer(rebasing: storage[start + name..<start + name + value])
                )
                record = start + name + value
            }
        }
    }

    /// Whether `bytes` spell `name`, ASCII letters compared without regard to case.
    package static func equalIgnoringCase(_ bytes: UnsafeBufferPointer<UInt8>, _ name: StaticString) -> Bool {
        guard bytes.count == name.utf8CodeUnitCount else { return false }
        let expected = name.utf8Start
        for offset in 0..<bytes.count where bytes[offset] != expected[offset] {
            let lower = bytes[offset] | 0x20
            guard lower == expected[offset] | 0x20, lower >= UInt8(ascii: "a"), lower <= UInt8(ascii: "z") else {
                return false
            }
        }
        return true
    }

    public func makeIterator() -> Iterator {
        Iterator(headers: self)
    }

    /// The fields in order, each read as a `String` pair.
    public struct Iterator: IteratorProtocol {
        private let headers: HTTPHeaders
        private var record = 0

        init(headers: HTTPHeaders) {
            self.headers = headers
        }

        public mutating func next() -> Element? {
            guard record < headers.storage.count else { return nil }
            defer { record = headers.end(of: record) }
            return (name: headers.name(of: record), value: headers.value(of: record))
        }
    }

    /// One `Name: value` line per field; credentials (`Authorization`, cookies, API keys) are
    /// shown as `<redacted>`.
    public var description: String {
        var lines: [String] = []
        forEachRecord { record in
            let redacted = Self.sensitiveNames.contains { nameEquals(record, $0) }
            lines.append("\(name(of: record)): \(redacted ? "<redacted>" : value(of: record))")
        }
        return lines.joined(separator: "\n")
    }

    private static let sensitiveNames = [
        "Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-API-Key",
    ]

    // MARK: Records

    /// A record's name and value lengths; `record` is the offset of its first byte.
    private static func lengths(of record: Int, in storage: UnsafeBufferPointer<UInt8>) -> (name: Int, value: Int) {
        let raw = UnsafeRawBufferPointer(storage)
        let name = UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: record, as: UInt16.self))
        let value = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: record + 2, as: UInt32.self))
        return (Int(name), Int(value))
    }

    private func end(of record: Int) -> Int {
        storage.withUnsafeBufferPointer { storage in
            let (name, value) = Self.lengths(of: record, in: storage)
            return record + Self.recordHeader + name + value
        }
    }

    private func forEachRecord(_ body: (Int) -> Void) {
        var record = 0
        while record < storage.count {
            body(record)
            record = end(of: record)
        }
    }

    private func name(of record: Int) -> String {
        storage.withUnsafeBufferPointer { storage in
            let (name, _) = Self.lengths(of: record, in: storage)
            let start = record + Self.recordHeader
            return String(decoding: UnsafeBufferPointer(rebasing: storage[start..<start + name]), as: UTF8.self)
        }
    }

    private func value(of record: Int) -> String {
        storage.withUnsafeBufferPointer { storage in
            let (name, value) = Self.lengths(of: record, in: storage)
            let start = record + Self.recordHeader + name
            return String(decoding: UnsafeBufferPointer(rebasing: storage[start..<start + value]), as: UTF8.self)
        }
    }

    /// Appends `other`'s record at `record`, bytes as they are.
    private mutating func copyRecord(_ record: Int, of other: HTTPHeaders) {
        other.storage.withUnsafeBufferPointer { source in
            let (name, value) = Self.lengths(of: record, in: source)
            let start = record + Self.recordHeader
            add(
                name: UnsafeBufferPointer(rebasing: source[start..<start + name]),
                value: UnsafeBufferPointer(rebasing: source[start + name..<start + name + value])
            )
        }
    }

    /// The offset of the first record at or after `start` whose name is `name`.
    private func firstRecord(named name: String, from start: Int) -> Int? {
        guard start < storage.count else { return nil }
        func search(_ name: UnsafeBufferPointer<UInt8>) -> Int? {
            storage.withUnsafeBufferPointer { storage in
                var record = start
                while record < storage.count {
                    if Self.nameEquals(record, in: storage, name) { return record }
                    let (nameLength, valueLength) = Self.lengths(of: record, in: storage)
                    record += Self.recordHeader + nameLength + valueLength
                }
                return nil
            }
        }
        return name.utf8.withContiguousStorageIfAvailable(search) ?? Array(name.utf8).withUnsafeBufferPointer(search)
    }

    private func nameEquals(_ record: Int, _ name: String) -> Bool {
        func compare(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
            storage.withUnsafeBufferPointer { Self.nameEquals(record, in: $0, name) }
        }
        return name.utf8.withContiguousStorageIfAvailable(compare) ?? Array(name.utf8).withUnsafeBufferPointer(compare)
    }

    /// Whether the name of the record at `record` is `name`, ASCII letters compared without regard
    /// to case.
    private static func nameEquals(
        _ record: Int,
        in storage: UnsafeBufferPointer<UInt8>,
        _ name: UnsafeBufferPointer<UInt8>
    ) -> Bool {
        guard lengths(of: record, in: storage).name == name.count else { return false }
        let start = record + recordHeader
        var offset = 0
        while offset < name.count {
            let a = storage[start + offset]
            let b = name[offset]
            if a != b {
                // Equal once lowercased, and a letter: other bytes differing by 0x20 do not match.
                let lower = a | 0x20
                guard lower == b | 0x20, lower >= UInt8(ascii: "a"), lower <= UInt8(ascii: "z") else { return false }
            }
            offset += 1
        }
        return true
    }
}
