/// The bytes a ``Channel`` still has to write: one contiguous, growable region, so that many
/// small frames go out in one `write`/`SSL_write`.
struct OutboundBuffer: ~Copyable {
    private var storage: UnsafeMutableRawPointer?
    private var capacity = 0
    private var readIndex = 0
    private var writeIndex = 0

    /// Capacity kept after the buffer drains; larger buffers are released to bound memory.
    private static let retainedCapacity = 256 * 1024

    init() {}

    deinit {
        storage?.deallocate()
    }

    var count: Int { writeIndex - readIndex }
    var isEmpty: Bool { writeIndex == readIndex }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count)
        (storage! + writeIndex).copyMemory(from: source, byteCount: bytes.count)
        writeIndex += bytes.count
    }

    /// Calls `body` with the unwritten bytes.
    func withReadableBytes<T>(_ body: (UnsafeRawBufferPointer) -> T) -> T {
        guard let storage else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return body(UnsafeRawBufferPointer(start: storage + readIndex, count: count))
    }

    /// Marks `byteCount` bytes as written.
    mutating func consume(_ byteCount: Int) {
        readIndex += byteCount
        if readIndex == writeIndex {
            readIndex = 0
            writeIndex = 0
            if capacity > Self.retainedCapacity {
                storage?.deallocate()
                storage = nil
                capacity = 0
            }
        }
    }

    /// Releases the memory.
    mutating func removeAll() {
        storage?.deallocate()
        storage = nil
        capacity = 0
        readIndex = 0
        writeIndex = 0
    }

    private mutating func reserve(_ extra: Int) {
        if writeIndex + extra <= capacity { return }
        if readIndex > 0 {
            // Move the unwritten bytes to the front.
            let pending = count
            if pending > 0 { storage!.copyMemory(from: storage! + readIndex, byteCount: pending) }
            readIndex = 0
            writeIndex = pending
            if writeIndex + extra <= capacity { return }
        }
        var newCapacity = max(capacity * 2, 16 * 1024)
        while newCapacity < writeIndex + extra { newCapacity *= 2 }
        let newStorage = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        if let storage {
            if writeIndex > 0 { newStorage.copyMemory(from: storage, byteCount: writeIndex) }
            storage.deallocate()
        }
        storage = newStorage
        capacity = newCapacity
    }
}
