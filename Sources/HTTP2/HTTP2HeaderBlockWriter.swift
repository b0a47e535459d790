import CNGHTTP2

/// Writes a request's header fields straight into the memory nghttp2 reads them from: the
/// `nghttp2_nv` entries, then the name and value bytes they point to, in one allocation that a
/// ``ClientStream`` owns until nghttp2 has copied it.
///
/// A sender that knows its fields (the APNs client) writes them here directly, instead of building
/// an ``HTTP2Request`` whose ``HTTP2Headers`` are then copied again. The sender states the number
/// of fields and of name and value bytes up front (see
/// ``HTTP2ClientConnection/send(method:fieldCount:byteCount:body:timeout:writeFields:)``); writing
/// more traps.
///
/// Names are written as given: HTTP/2 needs them lowercase.
///
/// Every field is flagged `NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE`: nghttp2
/// reads the names and values from this block when it encodes the HEADERS frame, instead of
/// copying them (and lowercasing the names) when the request is submitted, one allocation and
/// copy fewer per request. So the block must live until the frame is sent or given up: the
/// ``ClientStream`` that owns it lets it go on nghttp2's frame-sent callback, or in `deinit`
/// (the session keeps every stream nghttp2 knows alive until nghttp2 is done with it).
package struct HTTP2HeaderBlockWriter: ~Copyable {
    private let fields: UnsafeMutablePointer<nghttp2_nv>
    private let fieldCapacity: Int
    private var cursor: UnsafeMutablePointer<UInt8>
    private let end: UnsafeMutablePointer<UInt8>
    /// Fields written so far.
    package private(set) var count = 0

    /// The block for `fieldCount` fields with `byteCount` bytes of names and values, starting at
    /// `block` (which must be ``blockSize(fieldCount:byteCount:)`` bytes, 16-byte aligned).
    init(block: UnsafeMutableRawPointer, fieldCount: Int, byteCount: Int) {
        let arrayBytes = fieldCount * MemoryLayout<nghttp2_nv>.stride
        fields = block.bindMemory(to: nghttp2_nv.self, capacity: fieldCount)
        fieldCapacity = fieldCount
        cursor = (block + arrayBytes).bindMemory(to: UInt8.self, capacity: byteCount)
        end = cursor + byteCount
    }

    static func blockSize(fieldCount: Int, byteCount: Int) -> Int {
        fieldCount * MemoryLayout<nghttp2_nv>.stride + byteCount
    }

    /// The byte count of `string`'s UTF-8, for sizing a block.
    @inline(__always)
    package static func length(_ string: String) -> Int { string.utf8.count }

    /// Appends `name: value`.
    /// - Parameter neverIndex: HPACK "literal never indexed" (`NGHTTP2_NV_FLAG_NO_INDEX`).
    package mutating func append(name: StaticString, value: String, neverIndex: Bool = false) {
        let namePointer = cursor
        let nameLength = copy(name)
        let valuePointer = cursor
        let valueLength = copy(value)
        add(namePointer, nameLength, valuePointer, valueLength, neverIndex: neverIndex)
    }

    /// Appends `name` with a value of exactly `valueLength` bytes that `writeValue` fills in place
    /// (a formatted id or a normalised path, without making a `String` first).
    package mutating func append(
        name: StaticString,
        valueLength: Int,
        neverIndex: Bool = false,
        writeValue: (UnsafeMutableBufferPointer<UInt8>) -> Void
    ) {
        let namePointer = cursor
        let nameLength = copy(name)
        let valuePointer = cursor
        precondition(valueLength >= 0 && end - cursor >= valueLength, "header block overflow")
        writeValue(UnsafeMutableBufferPointer(start: valuePointer, count: valueLength))
        cursor += valueLength
        add(namePointer, nameLength, valuePointer, valueLength, neverIndex: neverIndex)
    }

    /// Appends a field whose name comes from a caller (lowercased here when asked).
    package mutating func append(name: String, value: String, neverIndex: Bool, lowercaseName: Bool) {
        let namePointer = cursor
        let nameLength = copy(name)
        if lowercaseName {
            for offset in 0..<nameLength where namePointer[offset] >= 65 && namePointer[offset] <= 90 {
                namePointer[offset] |= 0x20
            }
        }
        let valuePointer = cursor
        let valueLength = copy(value)
        add(namePointer, nameLength, valuePointer, valueLength, neverIndex: neverIndex)
    }

    @inline(__always)
    private mutating func add(
        _ name: UnsafeMutablePointer<UInt8>,
        _ nameLength: Int,
        _ value: UnsafeMutablePointer<UInt8>,
        _ valueLength: Int,
        neverIndex: Bool
    ) {
        precondition(count < fieldCapacity, "header block overflow")
        fields[count] = nghttp2_nv(
            name: name,
            value: value,
            namelen: nameLength,
            valuelen: valueLength,
            flags: neverIndex ? Self.noCopy | UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) : Self.noCopy
        )
        count += 1
    }

    private static let noCopy = UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | NGHTTP2_NV_FLAG_NO_COPY_VALUE.rawValue)

    private mutating func copy(_ string: StaticString) -> Int {
        let length = string.utf8CodeUnitCount
        precondition(end - cursor >= length, "header block overflow")
        cursor.update(from: string.utf8Start, count: length)
        cursor += length
        return length
    }

    private mutating func copy(_ string: String) -> Int {
        func copy(_ source: UnsafeBufferPointer<UInt8>) -> Int {
            precondition(end - cursor >= source.count, "header block overflow")
            if let base = source.baseAddress, source.count > 0 {
                cursor.update(from: base, count: source.count)
            }
            cursor += source.count
            return source.count
        }
        // In place (native and small strings): a mutable copy for `withUTF8` cost a retain and a
        // release of strings every request shares, such as the topic and the provider token.
        if let count = string.utf8.withContiguousStorageIfAvailable(copy) { return count }
        var string = string
        return string.withUTF8(copy)
    }

    /// The fields written, as strings (for tests comparing header blocks).
    package var writtenFields: [(name: String, value: String, neverIndex: Bool)] {
        (0..<count).map { index in
            let field = fields[index]
            return (
                String(decoding: UnsafeBufferPointer(start: field.name, count: field.namelen), as: UTF8.self),
                String(decoding: UnsafeBufferPointer(start: field.value, count: field.valuelen), as: UTF8.self),
                field.flags & UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) != 0
            )
        }
    }

    /// Calls `body` with a writer over scratch memory for `fieldCount` fields and `byteCount`
    /// bytes (for tests).
    package static func withScratch<R>(
        fieldCount: Int,
        byteCount: Int,
        _ body: (inout HTTP2HeaderBlockWriter) throws -> R
    ) rethrows -> R {
        let block = UnsafeMutableRawPointer.allocate(
            byteCount: max(1, blockSize(fieldCount: fieldCount, byteCount: byteCount)),
            alignment: 16
        )
        defer { block.deallocate() }
        var writer = HTTP2HeaderBlockWriter(block: block, fieldCount: fieldCount, byteCount: byteCount)
        return try body(&writer)
    }
}
