import CNGHTTP2

/// One request on its way through a ``ClientSession``.
///
/// `@unchecked Sendable`: the sender creates it and sets ``waiter`` before handing it to the
/// session through the session's `Mutex`; from then on every mutable property is read and written
/// only on the session's event loop thread, until the loop resumes the waiter. After that the loop
/// no longer writes the response fields, and the resumed task (or the completion handler) reads
/// them to build the ``HTTP2Response`` (a resumed task does so off the loop thread, so that String
/// decoding does not cost the loop time). Likewise the request's header block is encoded by the sending task,
/// so the loop only hands nghttp2 a ready `nghttp2_nv` array.
///
/// Raw memory: `requestFields` and `headerStorage` are allocated and freed only by this class
/// (when replaced or in `deinit`); every write stays within the capacity checked just before it,
/// and readers walk only the `headerLength` bytes written.
final class ClientStream: @unchecked Sendable {
    /// Who learns that the stream finished: a task suspended in `send`, or a completion handler
    /// (``HTTP2ClientConnection/submit(method:fieldCount:byteCount:body:writeFields:completion:)``),
    /// which runs on the loop thread. The session takes the waiter out (sets it to nil) before
    /// resuming it, so an `UnsafeContinuation` is resumed exactly once.
    enum Waiter {
        case task(UnsafeContinuation<Void, any Error>)
        /// Hears the response read from the stream, or the request's error.
        case handler(any HTTP2ResponseHandler)

        /// `stream` is the one this waiter waited for: a completion handler gets its response.
        func resume(_ stream: ClientStream, throwing error: (any Error)?) {
            switch self {
            case .task(let continuation):
                if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            case .handler(let handler):
                handler.responseArrived(error.map { .failure($0) } ?? .success(HTTP2ClientResponse(stream: stream)))
            }
        }
    }

    /// The request body (the header fields live only in ``requestFields``).
    let body: [UInt8]
    /// The request's own timeout in nanoseconds, or nil for the connection's default.
    let timeoutOverride: UInt64?
    var waiter: Waiter?
    /// The request's id in the session's ``ClientSessionState`` once the loop has seen it.
    var requestID: ClientRequestID?
    /// Cancelled before the loop saw the request: it fails when it gets there.
    var cancelRequested = false
    var bodyOffset = 0

    /// The encoded request header block: `fieldCount` `nghttp2_nv` entries followed by the bytes
    /// they point to. Freed once nghttp2 has copied it (at submit) or with the stream.
    private(set) var requestFields: UnsafeMutableRawPointer?
    private(set) var fieldCount = 0
    private var requestFieldsSize = 0

    // Response, filled on the loop, read by the resumed task.
    var status = 0
    /// Header fields as `[UInt16 name length][name][UInt32 value length][value]…`.
    private var headerStorage: UnsafeMutableRawPointer?
    private var headerCapacity = 0
    private var headerLength = 0
    private var headerCount = 0
    var responseBody: [UInt8] = []
    /// Bytes of every response header field received so far, in all header blocks, counted as
    /// ``ClientSessionState/headerFieldSize(nameLength:valueLength:)`` does.
    var headerListSize = 0

    /// When the request was handed to the session (monotonic nanoseconds): its timeout counts
    /// from here, time in the session's inbox included.
    var submittedAt: UInt64 = 0
    /// Encodes the header block (on the sending task).
    convenience init(request: HTTP2Request, timeoutOverride: UInt64?, authority: String, scheme: String) {
        var byteCount = ":path".utf8.count + request.path.utf8.count
        for field in request.headers { byteCount += field.name.utf8.count + field.value.utf8.count }
        self.init(
            method: request.method,
            authority: request.authority ?? authority,
            scheme: request.scheme ?? scheme,
            fieldCount: 1 + request.headers.count,
            byteCount: byteCount,
            body: request.body,
            timeoutOverride: timeoutOverride
        ) { writer in
            writer.append(name: ":path", value: request.path, neverIndex: request.pathNeverIndexed)
            for field in request.headers {
                writer.append(name: field.name, value: field.value, neverIndex: field.neverIndex, lowercaseName: true)
            }
        }
    }

    /// Encodes the header block (on the sending task): `:method`, `:scheme`, `:authority`, then
    /// what `writeFields` writes — `:path` first, then the regular fields — which must be at most
    /// `fieldCount` fields of `byteCount` name and value bytes.
    init(
        method: String,
        authority: String,
        scheme: String,
        fieldCount: Int,
        byteCount: Int,
        body: [UInt8],
        timeoutOverride: UInt64?,
        writeFields: (inout HTTP2HeaderBlockWriter) -> Void
    ) {
        self.body = body
        self.timeoutOverride = timeoutOverride
        let pseudoBytes =
            ":method:scheme:authority".utf8.count + method.utf8.count + scheme.utf8.count
            + authority.utf8.count
        let count = 3 + fieldCount
        let bytes = pseudoBytes + byteCount
        let block = UnsafeMutableRawPointer.allocate(
            byteCount: HTTP2HeaderBlockWriter.blockSize(fieldCount: count, byteCount: bytes),
            alignment: 16
        )
        var writer = HTTP2HeaderBlockWriter(block: block, fieldCount: count, byteCount: bytes)
        writer.append(name: ":method", value: method)
        writer.append(name: ":scheme", value: scheme)
        writer.append(name: ":authority", value: authority)
        writeFields(&writer)
        requestFields = block
        requestFieldsSize = HTTP2HeaderBlockWriter.blockSize(fieldCount: count, byteCount: bytes)
        self.fieldCount = writer.count
    }

    deinit {
        requestFields?.deallocate()
        headerStorage?.deallocate()
    }

    /// The `nghttp2_nv` array for `nghttp2_submit_request`.
    var requestFieldArray: UnsafePointer<nghttp2_nv>? {
        requestFields.map { UnsafePointer($0.assumingMemoryBound(to: nghttp2_nv.self)) }
    }

    /// Loop thread: nghttp2 has sent the HEADERS frame, so it no longer reads the header block
    /// (``HTTP2HeaderBlockWriter``'s fields are not copied). Its memory becomes the storage for
    /// the response's header fields (large enough for APNs' few short ones), saving an
    /// allocation.
    func releaseRequestFields() {
        guard let requestFields else { return }
        self.requestFields = nil
        if headerStorage == nil {
            headerStorage = requestFields
            headerCapacity = requestFieldsSize
        } else {
            requestFields.deallocate()
        }
    }

    /// Loop thread: records a response header field.
    func appendHeader(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let needed = headerLength + 6 + name.count + value.count
        if needed > headerCapacity {
            let capacity = max(needed, headerCapacity * 2, 256)
            let storage = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
            if let headerStorage {
                storage.copyMemory(from: headerStorage, byteCount: headerLength)
                headerStorage.deallocate()
            }
            headerStorage = storage
            headerCapacity = capacity
        }
        let base = headerStorage! + headerLength
        base.storeBytes(of: UInt16(truncatingIfNeeded: name.count).littleEndian, as: UInt16.self)
        if let source = name.baseAddress { (base + 2).copyMemory(from: source, byteCount: name.count) }
        (base + 2 + name.count).storeBytes(of: UInt32(truncatingIfNeeded: value.count).littleEndian, as: UInt32.self)
        if let source = value.baseAddress { (base + 6 + name.count).copyMemory(from: source, byteCount: value.count) }
        headerLength = needed
        headerCount += 1
    }

    /// Loop thread: forgets headers of an informational (1xx) response.
    func clearHeaders() {
        headerLength = 0
        headerCount = 0
    }

    /// The resumed task: calls `body` with each response header field's name and value bytes, in
    /// order (valid during the call only).
    func forEachHeader(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Void) {
        guard let headerStorage else { return }
        let bytes = UnsafeRawBufferPointer(start: headerStorage, count: headerLength)
        var offset = 0
        while offset + 2 <= bytes.count {
            let nameLength = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
            let name = UnsafeRawBufferPointer(rebasing: bytes[offset + 2..<offset + 2 + nameLength])
            offset += 2 + nameLength
            let valueLength = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            let value = UnsafeRawBufferPointer(rebasing: bytes[offset + 4..<offset + 4 + valueLength])
            offset += 4 + valueLength
            body(name, value)
        }
    }

    /// The number of response header fields.
    var responseHeaderCount: Int { headerCount }

    /// The resumed task: builds the response.
    func makeResponse() -> HTTP2Response {
        var headers = HTTP2Headers()
        headers.reserveCapacity(headerCount)
        if let headerStorage {
            let bytes = UnsafeRawBufferPointer(start: headerStorage, count: headerLength)
            var offset = 0
            while offset + 2 <= bytes.count {
                let nameLength = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
                offset += 2
                let name = String(
                    decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + nameLength]),
                    as: UTF8.self
                )
                offset += nameLength
                let valueLength = Int(
                    UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
                )
                offset += 4
                let value = String(
                    decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + valueLength]),
                    as: UTF8.self
                )
                offset += valueLength
                headers.add(name: name, value: value)
            }
        }
        return HTTP2Response(status: status, headers: headers, body: responseBody)
    }
}
