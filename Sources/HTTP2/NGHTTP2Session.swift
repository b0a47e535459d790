import CNGHTTP2

/// Owns one `nghttp2_session` and deletes it in `deinit`.
///
/// Used by one client or server session on its event loop thread only. nghttp2 does no I/O here:
/// the session feeds it bytes with ``receive(_:)`` and collects frames with ``nextOutput()``.
final class NGHTTP2Session {
    let pointer: OpaquePointer

    /// Takes ownership of a session created by `nghttp2_session_client_new2`/`server_new2`.
    init(takingOwnershipOf pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        nghttp2_session_del(pointer)
    }

    /// Builds callbacks and options, then a client or server session with `userData`.
    static func make(
        server: Bool,
        userData: UnsafeMutableRawPointer,
        configureCallbacks: (OpaquePointer) -> Void,
        configureOptions: (OpaquePointer) -> Void
    ) throws(HTTP2Error) -> NGHTTP2Session {
        var callbacks: OpaquePointer?
        var option: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks,
            nghttp2_option_new(&option) == 0, let option
        else {
            throw HTTP2Error(code: .protocolError, isSafeToRetry: true, message: "nghttp2: out of memory")
        }
        defer {
            nghttp2_session_callbacks_del(callbacks)
            nghttp2_option_del(option)
        }
        configureCallbacks(callbacks)
        // Closed streams are not kept for priority bookkeeping: less memory per connection.
        nghttp2_option_set_no_closed_streams(option, 1)
        configureOptions(option)
        var session: OpaquePointer?
        let result =
            server
            ? nghttp2_session_server_new2(&session, callbacks, userData, option)
            : nghttp2_session_client_new2(&session, callbacks, userData, option)
        guard result == 0, let session else {
            throw HTTP2Error(
                code: .protocolError,
                isSafeToRetry: true,
                message: "nghttp2 session: \(String(cString: nghttp2_strerror(result)))"
            )
        }
        return NGHTTP2Session(takingOwnershipOf: session)
    }

    /// A fatal error of `nghttp2_session_mem_recv`: its code and text.
    struct ReceiveFailure {
        var code: Int32
        var reason: String
    }

    /// Feeds received bytes; callbacks run during the call. Returns nil or the fatal error.
    func receive(_ bytes: UnsafeRawBufferPointer) -> ReceiveFailure? {
        guard let base = bytes.baseAddress else { return nil }
        let result = nghttp2_session_mem_recv(pointer, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        guard result < 0 else { return nil }
        return ReceiveFailure(code: Int32(result), reason: String(cString: nghttp2_strerror(Int32(result))))
    }

    enum Output {
        case bytes(UnsafeRawBufferPointer)
        case none
        case failed(String)
    }

    /// The next chunk of serialized frames, valid until the next call.
    func nextOutput() -> Output {
        var data: UnsafePointer<UInt8>?
        let count = nghttp2_session_mem_send(pointer, &data)
        if count < 0 { return .failed(String(cString: nghttp2_strerror(Int32(count)))) }
        guard count > 0, let data else { return .none }
        return .bytes(UnsafeRawBufferPointer(start: data, count: count))
    }

    /// Queues a SETTINGS frame.
    func submitSettings(_ entries: [(id: nghttp2_settings_id, value: UInt32)]) -> Int32 {
        var settings = entries.map { nghttp2_settings_entry(settings_id: Int32($0.id.rawValue), value: $0.value) }
        return nghttp2_submit_settings(pointer, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
    }

    func remoteSetting(_ id: nghttp2_settings_id) -> UInt32 {
        nghttp2_session_get_remote_settings(pointer, id)
    }

    var wantsRead: Bool { nghttp2_session_want_read(pointer) != 0 }
    var wantsWrite: Bool { nghttp2_session_want_write(pointer) != 0 }
}

/// Builds the `nghttp2_nv` array for a header block in scratch memory reused across requests, so
/// that submitting a request allocates nothing for its headers. nghttp2 copies names and values
/// during `nghttp2_submit_request`/`_response`, so the memory is free again right after.
struct HeaderBlockBuilder: ~Copyable {
    private var bytes: UnsafeMutableRawPointer
    private var byteCapacity: Int
    private var fields: UnsafeMutablePointer<nghttp2_nv>
    private var fieldCapacity: Int
    private var byteCount = 0
    private(set) var count = 0

    init() {
        byteCapacity = 4096
        bytes = .allocate(byteCount: byteCapacity, alignment: 8)
        fieldCapacity = 32
        fields = .allocate(capacity: fieldCapacity)
    }

    deinit {
        bytes.deallocate()
        fields.deallocate()
    }

    /// Starts a new block; `fieldCount` and `byteCount` are upper bounds for what follows.
    mutating func reset(fieldCount: Int, byteCount needed: Int) {
        if needed > byteCapacity {
            bytes.deallocate()
            byteCapacity = max(needed, byteCapacity * 2)
            bytes = .allocate(byteCount: byteCapacity, alignment: 8)
        }
        if fieldCount > fieldCapacity {
            fields.deallocate()
            fieldCapacity = max(fieldCount, fieldCapacity * 2)
            fields = .allocate(capacity: fieldCapacity)
        }
        byteCount = 0
        count = 0
    }

    /// Appends a field; `lowercaseName` lowercases ASCII letters of the name.
    mutating func append(name: String, value: String, neverIndex: Bool, lowercaseName: Bool) {
        let nameStart = bytes + byteCount
        let nameLength = copy(name)
        if lowercaseName {
            let namePointer = nameStart.assumingMemoryBound(to: UInt8.self)
            for index in 0..<nameLength where namePointer[index] >= 65 && namePointer[index] <= 90 {
                namePointer[index] |= 0x20
            }
        }
        let valueStart = bytes + byteCount
        let valueLength = copy(value)
        fields[count] = nghttp2_nv(
            name: nameStart.assumingMemoryBound(to: UInt8.self),
            value: valueStart.assumingMemoryBound(to: UInt8.self),
            namelen: nameLength,
            valuelen: valueLength,
            flags: neverIndex ? UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) : UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)
        )
        count += 1
    }

    private mutating func copy(_ string: String) -> Int {
        let destination = bytes + byteCount
        let length =
            string.utf8.withContiguousStorageIfAvailable { source -> Int in
                if let base = source.baseAddress, source.count > 0 {
                    destination.copyMemory(from: base, byteCount: source.count)
                }
                return source.count
            }
            ?? {
                var index = 0
                for byte in string.utf8 {
                    destination.storeBytes(of: byte, toByteOffset: index, as: UInt8.self)
                    index += 1
                }
                return index
            }()
        byteCount += length
        return length
    }

    /// The fields built so far, valid until the next change.
    var pointer: UnsafePointer<nghttp2_nv> { UnsafePointer(fields) }
}
