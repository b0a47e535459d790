import CNGHTTP2
import HeraldCore
import HeraldIO

/// What the client session does when nghttp2 calls back (loop thread, inside
/// `nghttp2_session_mem_recv`/`_mem_send`), and the C trampolines that get there.
extension ClientSession {
    /// The stream nghttp2 has as `streamID`'s user data, retained. Safe: every stream nghttp2 has
    /// a pointer to is held by the state (or by `Closing.retired` until nghttp2 is gone), and the
    /// state lets a stream go only when nghttp2 closes it (`on_stream_close`, after which nghttp2
    /// forgets it) or after its user data is cleared (``onFrameNotSent(_:libraryError:)``).
    func stream(for streamID: Int32) -> ClientStream? {
        guard state.phase != .closed, let nghttp2,
            let pointer = nghttp2_session_get_stream_user_data(nghttp2.pointer, streamID)
        else { return nil }
        return Unmanaged<ClientStream>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Calls `body` with the stream without retaining it (the state keeps it alive, as above).
    @inline(__always)
    private func withStream(_ streamID: Int32, _ body: (ClientStream) -> Void) {
        guard state.phase != .closed,
            let pointer = nghttp2.flatMap({ nghttp2_session_get_stream_user_data($0.pointer, streamID) })
        else { return }
        Unmanaged<ClientStream>.fromOpaque(pointer)._withUnsafeGuaranteedRef(body)
    }

    /// A response header field. The stream still collects its response while it has its waiter:
    /// the shell takes the waiter out when it runs the state's answer for the request (what
    /// ``ClientSessionState/isReceiving(_:)`` tells), so no state access is needed per field.
    ///
    /// Every field counts towards the stream's header list, answered or not, across all its
    /// header blocks (informational responses, the final one, trailers): past
    /// ``ClientSessionState/maximumHeaderListSize`` the connection is dropped.
    /// - Returns: false when the field broke the limit (nghttp2 must stop: the session is failed).
    func onHeader(streamID: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> Bool {
        guard state.phase != .closed,
            let pointer = nghttp2.flatMap({ nghttp2_session_get_stream_user_data($0.pointer, streamID) })
        else { return true }
        let stream = Unmanaged<ClientStream>.fromOpaque(pointer).takeUnretainedValue()
        stream.headerListSize += State.headerFieldSize(nameLength: name.count, valueLength: value.count)
        if stream.headerListSize > State.maximumHeaderListSize {
            headerListTooLarge(.bytes(limit: State.maximumHeaderListSize))
            return false
        }
        guard stream.waiter != nil else { return true }
        if name.first == UInt8(ascii: ":") {
            // The only response pseudo-header is :status (nghttp2 checks).
            var status = 0
            for byte in value where byte >= 48 && byte <= 57 { status = status * 10 + Int(byte - 48) }
            if stream.status >= 100 && stream.status < 200 { stream.clearHeaders() }
            stream.status = status
            return true
        }
        stream.appendHeader(name: name, value: value)
        return true
    }

    /// The peer sent more header data than allowed: log it and drop the connection (counted in
    /// `herald_http2_client_connection_failures_total{cause="header list too large"}`).
    func headerListTooLarge(_ excess: State.HeaderListExcess) {
        logger.warning(
            "HTTP/2 server sent an oversized header list; dropping the connection",
            metadata: ["authority": .string(defaultAuthority), "limit": .string(excess.description)]
        )
        withActions { state.headerListTooLarge(excess, actions: &$0) }
    }

    func onData(streamID: Int32, bytes: UnsafeRawBufferPointer) {
        guard let stream = stream(for: streamID), let id = stream.requestID, state.isReceiving(id) else { return }
        let limit = configuration.maximumResponseBodySize
        if stream.responseBody.count + bytes.count > limit {
            withActions { state.responseTooLarge(id, limit: limit, actions: &$0) }
            return
        }
        stream.responseBody.append(contentsOf: bytes)
    }

    func onFrameReceived(_ frame: UnsafePointer<nghttp2_frame>) {
        guard state.phase != .closed, let nghttp2 else { return }
        let header = frame.pointee.hd
        switch Int(header.type) {
        case Int(NGHTTP2_SETTINGS.rawValue) where header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0:
            // nghttp2 has applied the SETTINGS when it calls back. Publish before anything
            // resumes, so a caller sees the new limit with its response.
            let limit = Int(nghttp2.remoteSetting(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
            let first = state.settingsReceived(maxConcurrentStreams: limit)
            publishStatus()
            if first, let settingsWaiter {
                self.settingsWaiter = nil
                settingsWaiter.resume()
            }
        case Int(NGHTTP2_PING.rawValue) where header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0:
            state.pingAcknowledged()
            if let pingTimeoutTimer {
                eventLoop.cancelTimer(pingTimeoutTimer)
                self.pingTimeoutTimer = nil
            }
        case Int(NGHTTP2_GOAWAY.rawValue):
            let frame = frame.pointee.goaway
            let debugData =
                frame.opaque_data.map { Array(UnsafeBufferPointer(start: $0, count: frame.opaque_data_len)) } ?? []
            let goAway = HTTP2GoAway(
                lastStreamID: Int(frame.last_stream_id),
                errorCode: HTTP2ErrorCode(rawValue: frame.error_code),
                debugData: debugData
            )
            metrics.goAways.increment(labels: [("error_code", goAway.errorCode.description)])
            logger.notice(
                "HTTP/2 GOAWAY received",
                metadata: [
                    "authority": .string(defaultAuthority), "last_stream_id": .int(goAway.lastStreamID),
                    "error_code": .string(goAway.errorCode.description), "debug": .string(goAway.debugText),
                ]
            )
            withActions { state.goAwayReceived(goAway, actions: &$0) }
            publishStatus()
        default:
            break
        }
    }

    func onFrameSent(_ frame: UnsafePointer<nghttp2_frame>) {
        guard Int(frame.pointee.hd.type) == Int(NGHTTP2_HEADERS.rawValue) else { return }
        withStream(frame.pointee.hd.stream_id) { stream in
            if let id = stream.requestID { state.headersSent(id) }
            stream.releaseRequestFields()
        }
    }

    /// A request's HEADERS could not be sent (it was reset while queued, a GOAWAY came, or the
    /// session is closing). The stream may never have been opened in nghttp2, so the state finds
    /// the request by stream id rather than by user data.
    func onFrameNotSent(_ frame: UnsafePointer<nghttp2_frame>, libraryError: Int32) {
        guard Int(frame.pointee.hd.type) == Int(NGHTTP2_HEADERS.rawValue), state.phase != .closed, let nghttp2 else {
            return
        }
        let streamID = frame.pointee.hd.stream_id
        // The state may hold the last reference (a timed-out or cancelled request) and lets it go
        // now: nghttp2 must no longer point at the stream, or `on_stream_close` would read freed
        // memory. Without user data it finds nothing.
        nghttp2_session_set_stream_user_data(nghttp2.pointer, streamID, nil)
        let reason = String(cString: nghttp2_strerror(libraryError))
        withActions { state.headersNotSent(streamID: streamID, reason: reason, actions: &$0) }
    }

    func onStreamClose(streamID: Int32, errorCode: UInt32) {
        guard let stream = stream(for: streamID), let id = stream.requestID else { return }
        let status = stream.status
        withActions {
            state.streamClosed(id, errorCode: HTTP2ErrorCode(rawValue: errorCode), status: status, actions: &$0)
        }
    }
}

// MARK: - nghttp2 C callbacks

/// Calls `body` with the session behind `userData` without retaining it: nghttp2 calls back only
/// during calls the session itself makes, so it is alive.
@inline(__always)
private func withClientSession<R>(_ userData: UnsafeMutableRawPointer?, _ body: (ClientSession) -> R) -> R {
    Unmanaged<ClientSession>.fromOpaque(userData!)._withUnsafeGuaranteedRef(body)
}

func clientOnHeader(
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
    let accepted = withClientSession(userData) {
        $0.onHeader(
            streamID: frame.pointee.hd.stream_id,
            name: UnsafeRawBufferPointer(start: name, count: nameLength),
            value: UnsafeRawBufferPointer(start: value, count: valueLength)
        )
    }
    // A fatal error: `nghttp2_session_mem_recv` stops at once and reads nothing more.
    return accepted ? 0 : NGHTTP2_ERR_CALLBACK_FAILURE.rawValue
}

func clientOnDataChunk(
    _ session: OpaquePointer?,
    _ flags: UInt8,
    _ streamID: Int32,
    _ data: UnsafePointer<UInt8>?,
    _ length: Int,
    _ userData: UnsafeMutableRawPointer?
) -> Int32 {
    withClientSession(userData) {
        $0.onData(streamID: streamID, bytes: UnsafeRawBufferPointer(start: data, count: length))
    }
    return 0
}

func clientOnFrameReceived(
    _ session: OpaquePointer?,
    _ frame: UnsafePointer<nghttp2_frame>?,
    _ userData: UnsafeMutableRawPointer?
) -> Int32 {
    if let frame { withClientSession(userData) { $0.onFrameReceived(frame) } }
    return 0
}

func clientOnFrameSent(
    _ session: OpaquePointer?,
    _ frame: UnsafePointer<nghttp2_frame>?,
    _ userData: UnsafeMutableRawPointer?
) -> Int32 {
    if let frame { withClientSession(userData) { $0.onFrameSent(frame) } }
    return 0
}

func clientOnFrameNotSent(
    _ session: OpaquePointer?,
    _ frame: UnsafePointer<nghttp2_frame>?,
    _ libraryError: Int32,
    _ userData: UnsafeMutableRawPointer?
) -> Int32 {
    if let frame { withClientSession(userData) { $0.onFrameNotSent(frame, libraryError: libraryError) } }
    return 0
}

func clientOnStreamClose(
    _ session: OpaquePointer?,
    _ streamID: Int32,
    _ errorCode: UInt32,
    _ userData: UnsafeMutableRawPointer?
) -> Int32 {
    withClientSession(userData) { $0.onStreamClose(streamID: streamID, errorCode: errorCode) }
    return 0
}

/// Copies the next piece of a request body into nghttp2's buffer. `source.ptr` is the unretained
/// ``ClientStream``, kept alive by the session's state while its stream is open.
func clientReadRequestBody(
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
    let stream = Unmanaged<ClientStream>.fromOpaque(pointer).takeUnretainedValue()
    let count = stream.body.withUnsafeBytes { body -> Int in
        let count = min(length, body.count - stream.bodyOffset)
        if count > 0 {
            UnsafeMutableRawPointer(buffer).copyMemory(from: body.baseAddress! + stream.bodyOffset, byteCount: count)
        }
        return count
    }
    stream.bodyOffset += count
    if stream.bodyOffset >= stream.body.count {
        flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
    }
    return count
}
