import CNGHTTP2
import HeraldCore
import HeraldIO

/// One request stream on the server side.
///
/// `@unchecked Sendable`: created and mutated only on the session's event loop thread; the
/// handler task only carries the reference back to the loop (``ServerSession/respond(_:with:)``).
final class ServerStream: @unchecked Sendable {
    let id: Int32
    let events = StreamEvents()
    var method = ""
    var path = ""
    var authority = ""
    var scheme = ""
    var headers = HTTP2Headers()
    var body: [UInt8] = []
    var dispatched = false
    var responded = false
    var closed = false
    var responseBody: [UInt8] = []
    var responseOffset = 0

    init(id: Int32) {
        self.id = id
    }
}

/// The loop side of one server connection: an nghttp2 server session over a channel.
///
/// `@unchecked Sendable`: `core`, `id`, `eventLoop` and `configuration` are immutable; every
/// other property is read and written only on `eventLoop`'s thread (channel callbacks, and
/// closures sent there with ``execute(_:)``).
final class ServerSession: ChannelHandler, @unchecked Sendable {
    let id: Int
    let eventLoop: EventLoop
    private let core: HTTP2ServerCore
    private let configuration: HTTP2Server.Configuration
    private(set) var handle: HTTP2ServerConnection?

    private var channel: Channel?
    private var nghttp2: NGHTTP2Session?
    private var streams: [Int32: ServerStream] = [:]
    private var headerBlock = HeaderBlockBuilder()
    private var goingAway = false
    private var closeAfterWrite = false
    private var closed = false
    private var lastReadTime: UInt64 = 0
    private var idleTimer: TimerHandle?
    var answersPings: Bool

    init(id: Int, core: HTTP2ServerCore, configuration: HTTP2Server.Configuration) throws {
        self.id = id
        self.core = core
        self.configuration = configuration
        self.eventLoop = configuration.eventLoop
        self.answersPings = configuration.answersPings
        self.nghttp2 = try NGHTTP2Session.make(
            server: true,
            userData: Unmanaged.passUnretained(self).toOpaque(),
            configureCallbacks: { callbacks in
                nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, serverOnBeginHeaders)
                nghttp2_session_callbacks_set_on_header_callback(callbacks, serverOnHeader)
                nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, serverOnDataChunk)
                nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, serverOnFrameReceived)
                nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, serverOnStreamClose)
            },
            configureOptions: { option in
                // PINGs are acknowledged by hand, so that a test can make the server go silent.
                nghttp2_option_set_no_auto_ping_ack(option, 1)
            }
        )
    }

    /// Runs `body` with this session on its loop.
    func execute(_ body: @escaping @Sendable (ServerSession) -> Void) {
        eventLoop.execute { body(self) }
    }

    // MARK: controls (loop thread)

    func setMaxConcurrentStreams(_ value: Int) {
        guard !closed, let nghttp2 else { return }
        _ = nghttp2.submitSettings([(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, UInt32(clamping: value))])
        flushSession()
    }

    func goAway(lastStreamID: Int?, errorCode: HTTP2ErrorCode, debugData: [UInt8], closeImmediately: Bool) {
        guard !closed, let nghttp2 else { return }
        if goingAway, lastStreamID == nil, errorCode == .noError, debugData.isEmpty {
            // A GOAWAY already went out, perhaps with a reason (the APNs simulator's `Shutdown`);
            // the server's plain one at shutdown would only replace it at the client.
            if closeImmediately { closeAfterWrite = true }
            flushSession()
            closeIfDone()
            return
        }
        let last = lastStreamID.map { Int32(clamping: $0) } ?? nghttp2_session_get_last_proc_stream_id(nghttp2.pointer)
        debugData.withUnsafeBufferPointer { data in
            _ = nghttp2_submit_goaway(
                nghttp2.pointer,
                UInt8(NGHTTP2_FLAG_NONE.rawValue),
                last,
                errorCode.rawValue,
                data.baseAddress,
                data.count
            )
        }
        goingAway = true
        if closeImmediately { closeAfterWrite = true }
        flushSession()
        closeIfDone()
    }

    func abort() {
        channel?.close(mode: .abort)
    }

    /// Sends the handler's response, unless the stream is gone (reset, or above a GOAWAY).
    func respond(_ stream: ServerStream, with response: HTTP2ServerResponse) {
        guard !closed, !stream.closed, !stream.responded, let nghttp2, streams[stream.id] === stream else { return }
        stream.responded = true
        if let code = response.resetCode {
            nghttp2_submit_rst_stream(nghttp2.pointer, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, code.rawValue)
            flushSession()
            return
        }
        var byteCount = 16
        for field in response.headers { byteCount += field.name.utf8.count + field.value.utf8.count }
        headerBlock.reset(fieldCount: 1 + response.headers.count, byteCount: byteCount)
        headerBlock.append(name: ":status", value: String(response.status), neverIndex: false, lowercaseName: false)
        for field in response.headers {
            headerBlock.append(name: field.name, value: field.value, neverIndex: field.neverIndex, lowercaseName: true)
        }
        let result: Int32
        if response.body.isEmpty {
            result = nghttp2_submit_response(nghttp2.pointer, stream.id, headerBlock.pointer, headerBlock.count, nil)
        } else {
            stream.responseBody = response.body
            var provider = nghttp2_data_provider(
                source: nghttp2_data_source(ptr: Unmanaged.passUnretained(stream).toOpaque()),
                read_callback: serverReadResponseBody
            )
            result = nghttp2_submit_response(
                nghttp2.pointer,
                stream.id,
                headerBlock.pointer,
                headerBlock.count,
                &provider
            )
        }
        if result != 0 {
            configuration.logger.debug(
                "cannot submit an HTTP/2 response",
                metadata: ["error": .string(String(cString: nghttp2_strerror(result)))]
            )
        }
        flushSession()
    }

    // MARK: loop internals

    private func flushSession() {
        guard let channel, let nghttp2, !closed else { return }
        while channel.pendingWriteBytes < 1 << 20 {
            switch nghttp2.nextOutput() {
            case .bytes(let bytes):
                do {
                    try channel.write(bytes)
                } catch {
                    return  // closed under us: channelInactive ends the session
                }
            case .none:
                channel.flush()
                return
            case .failed(let reason):
                configuration.logger.debug("HTTP/2 server session failed", metadata: ["error": .string(reason)])
                channel.close(mode: .abort)
                return
            }
        }
        channel.flush()
    }

    private func closeIfDone() {
        guard !closed, let channel else { return }
        if closeAfterWrite || (goingAway && streams.isEmpty) {
            channel.close(mode: .graceful)
        }
    }

    private func scheduleIdleCheck(at time: UInt64) {
        idleTimer = eventLoop.scheduleTimer(at: time) { [self] in
            idleTimer = nil
            guard !closed, let timeout = configuration.idleTimeout?.nanoseconds else { return }
            let now = EventLoop.monotonicNanoseconds()
            if now &- lastReadTime >= timeout {
                goAway(
                    lastStreamID: nil,
                    errorCode: .noError,
                    debugData: Array("idle timeout".utf8),
                    closeImmediately: true
                )
            } else {
                scheduleIdleCheck(at: lastReadTime &+ timeout)
            }
        }
    }

    private func dispatch(_ stream: ServerStream) {
        guard !stream.dispatched, let handle else { return }
        stream.dispatched = true
        let request = HTTP2ServerRequest(
            method: stream.method,
            path: stream.path,
            authority: stream.authority,
            scheme: stream.scheme,
            headers: stream.headers,
            body: stream.body,
            streamID: Int(stream.id),
            connection: handle,
            events: stream.events
        )
        stream.body = []
        if !core.dispatch(HTTP2ServerCore.Work(request: request, session: self, stream: stream)) {
            respond(stream, with: HTTP2ServerResponse(status: 503))
        }
    }

    // MARK: ChannelHandler

    func channelActive(_ channel: Channel) {
        self.channel = channel
        // Made here, not in init: the handle and the session refer to each other until
        // channelInactive, which only channels that became active receive.
        handle = HTTP2ServerConnection(id: id, session: self, peerCertificate: channel.peerCertificate)
        lastReadTime = EventLoop.monotonicNanoseconds()
        core.register(self)
        guard let nghttp2 else { return }
        _ = nghttp2.submitSettings([
            (NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, UInt32(clamping: configuration.maxConcurrentStreams)),
            (NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, UInt32(clamping: configuration.initialWindowSize)),
        ])
        flushSession()
        if let timeout = configuration.idleTimeout?.nanoseconds {
            scheduleIdleCheck(at: lastReadTime &+ timeout)
        }
        if let handle { configuration.onConnection?(handle) }
    }

    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        guard !closed, let nghttp2 else { return }
        lastReadTime = eventLoop.iterationTime
        if let failure = nghttp2.receive(bytes) {
            configuration.logger.debug(
                "HTTP/2 protocol error from client",
                metadata: ["error": .string(failure.reason)]
            )
            flushSession()  // nghttp2 has queued a GOAWAY
            channel.close(mode: .graceful)
        }
    }

    func channelReadComplete(_ channel: Channel) {
        flushSession()
        closeIfDone()
    }

    func channelWritable(_ channel: Channel) {
        flushSession()
        closeIfDone()
    }

    func channelInactive(_ channel: Channel, error: (any Error)?) {
        closed = true
        self.channel = nil
        if let idleTimer { eventLoop.cancelTimer(idleTimer) }
        idleTimer = nil
        let retired = Array(streams.values)
        for stream in retired { stream.closed = true }
        streams = [:]
        core.unregister(self)
        handle = nil
        eventLoop.execute { [self] in
            nghttp2 = nil
            _ = retired
        }
    }

    // MARK: nghttp2 callbacks (loop thread)

    private func stream(for streamID: Int32) -> ServerStream? {
        guard !closed, let nghttp2, let pointer = nghttp2_session_get_stream_user_data(nghttp2.pointer, streamID) else {
            return nil
        }
        return Unmanaged<ServerStream>.fromOpaque(pointer).takeUnretainedValue()
    }

    fileprivate func onBeginHeaders(_ frame: UnsafePointer<nghttp2_frame>) {
        guard !closed, let nghttp2, Int(frame.pointee.hd.type) == Int(NGHTTP2_HEADERS.rawValue),
            frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST
        else { return }
        let stream = ServerStream(id: frame.pointee.hd.stream_id)
        streams[stream.id] = stream
        nghttp2_session_set_stream_user_data(nghttp2.pointer, stream.id, Unmanaged.passUnretained(stream).toOpaque())
    }

    fileprivate func onHeader(streamID: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        guard let stream = stream(for: streamID), !stream.dispatched else { return }
        let name = String(decoding: name, as: UTF8.self)
        let value = String(decoding: value, as: UTF8.self)
        switch name {
        case ":method": stream.method = value
        case ":path": stream.path = value
        case ":authority": stream.authority = value
        case ":scheme": stream.scheme = value
        default:
            if name == "host", stream.authority.isEmpty { stream.authority = value }
            stream.headers.add(name: name, value: value)
        }
    }

    fileprivate func onData(streamID: Int32, bytes: UnsafeRawBufferPointer) {
        guard let stream = stream(for: streamID), !stream.dispatched, !stream.responded else { return }
        if stream.body.count + bytes.count > configuration.maximumRequestBodySize {
            stream.body = []
            respond(stream, with: HTTP2ServerResponse(status: 413))
            return
        }
        stream.body.append(contentsOf: bytes)
    }

    fileprivate func onFrameReceived(_ frame: UnsafePointer<nghttp2_frame>) {
        guard !closed else { return }
        let header = frame.pointee.hd
        let endStream = header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        switch Int(header.type) {
        case Int(NGHTTP2_HEADERS.rawValue), Int(NGHTTP2_DATA.rawValue):
            if endStream, let stream = stream(for: header.stream_id), !stream.responded {
                dispatch(stream)
            }
        case Int(NGHTTP2_RST_STREAM.rawValue):
            stream(for: header.stream_id)?.events.recordReset(
                HTTP2ErrorCode(rawValue: frame.pointee.rst_stream.error_code)
            )
        case Int(NGHTTP2_PING.rawValue) where header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0:
            handle?.countPing()
            if answersPings, let nghttp2 {
                var opaque = frame.pointee.ping.opaque_data
                withUnsafeBytes(of: &opaque) { bytes in
                    _ = nghttp2_submit_ping(
                        nghttp2.pointer,
                        UInt8(NGHTTP2_FLAG_ACK.rawValue),
                        bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
                    )
                }
            }
        default:
            break
        }
    }

    fileprivate func onStreamClose(streamID: Int32) {
        guard !closed, let stream = streams.removeValue(forKey: streamID) else { return }
        stream.closed = true
    }

    fileprivate func readResponseBody(
        _ stream: ServerStream,
        into buffer: UnsafeMutableRawPointer,
        length: Int
    ) -> (
        count: Int, end: Bool
    ) {
        let count = stream.responseBody.withUnsafeBytes { body -> Int in
            let count = min(length, body.count - stream.responseOffset)
            if count > 0 { buffer.copyMemory(from: body.baseAddress! + stream.responseOffset, byteCount: count) }
            return count
        }
        stream.responseOffset += count
        return (count, stream.responseOffset >= stream.responseBody.count)
    }
}

// MARK: - nghttp2 C callbacks

private func serverSession(_ userData: UnsafeMutableRawPointer?) -> ServerSession {
    Unmanaged<ServerSession>.fromOpaque(userData!).takeUnretainedValue()
}

private func serverOnBeginHeaders(
    _ session: OpaquePointer?,
    _ frame: UnsafePointer<nghttp2_frame>?,
    _ userData: UnsafeMutableRawPointer?
) -> Int32 {
    if let frame { serverSession(userData).onBeginHeaders(frame) }
    return 0
}

private func serverOnHeader(
    _ session: OpaquePointer?,
    _ frame: UnsafePointer<nghttp2_frame>?,
    _ name: UnsafePointer<UInt8>?,
    _ nameLength: Int,
    _ value: UnsafePointer<UInt8>?,
    _ valueLength: Int,
    _ flags: UInt8,
    _ userData: UnsafeMutableRawPointer?
) -> Int32 {
    guard let frame else { return 0 }
    serverSession(userData).onHeader(
        streamID: frame.pointee.hd.stream_id,
        name: UnsafeRawBufferPointer(start: name, count: nameLength),
        value: UnsafeRawBufferPointer(start: value, count: valueLength)
    )
    return 0
}

private func serverOnDataChunk(
    _ session: OpaquePointer?,
    _ flags: UInt8,
    _ streamID: Int32,
    _ data: UnsafePointer<UInt8>?,
    _ length: Int,
    _ userData: UnsafeMutableRawPointer?
) -> Int32 {
    serverSession(userData).onData(streamID: streamID, bytes: UnsafeRawBufferPointer(start: data, count: length))
    return 0
}

private func serverOnFrameReceived(
    _ session: OpaquePointer?,
    _ frame: UnsafePointer<nghttp2_frame>?,
    _ userData: UnsafeMutableRawPointer?
) -> Int32 {
    if let frame { serverSession(userData).onFrameReceived(frame) }
    return 0
}

private func serverOnStreamClose(
    _ session: OpaquePointer?,
    _ streamID: Int32,
    _ errorCode: UInt32,
    _ userData: UnsafeMutableRawPointer?
) -> Int32 {
    serverSession(userData).onStreamClose(streamID: streamID)
    return 0
}

/// `source.ptr` is the unretained ``ServerStream``, kept alive by the session's stream table.
private func serverReadResponseBody(
    _ session: OpaquePointer?,
    _ streamID: Int32,
    _ buffer: UnsafeMutablePointer<UInt8>?,
    _ length: Int,
    _ flags: UnsafeMutablePointer<UInt32>?,
    _ source: UnsafeMutablePointer<nghttp2_data_source>?,
    _ userData: UnsafeMutableRawPointer?
) -> Int {
    guard let source, let pointer = source.pointee.ptr, let buffer, let flags else {
        return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
    }
    let stream = Unmanaged<ServerStream>.fromOpaque(pointer).takeUnretainedValue()
    let (count, end) = serverSession(userData).readResponseBody(
        stream,
        into: UnsafeMutableRawPointer(buffer),
        length: length
    )
    if end { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
    return count
}
