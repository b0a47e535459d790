import CNGHTTP2
import HeraldCore
import HeraldIO

/// What the client session does when nghttp2 calls back (loop thread, inside
/// `nghttp2_session_mem_recv`/`_mem_send`), and the C trampolines that get there.
extension ClientSession {
    /// The stream nghttp2 has as `streamID`'s user data, retained. Safe: every stream nghttp2 has
    /// a pointer to is held by the open list (or `retired`, until nghttp2 is gone), and a stream
    /// leaves the open list only in `on_stream_close`, after which nghttp2 forgets the stream, or
    /// once its user data is cleared (``onFrameNotSent(_:libraryError:)``).
    func stream(for streamID: Int32) -> ClientStream? {
        guard phase != .closed, let nghttp2,
            let pointer = nghttp2_session_get_stream_user_data(nghttp2.pointer, streamID)
        else { return nil }
        return Unmanaged<ClientStream>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Calls `body` with the stream without retaining it (the open list keeps it alive).
    @inline(__always)
    private func withStream(_ streamID: Int32, _ body: (ClientStream) -> Void) {
        guard phase != .closed,
            let pointer = nghttp2.flatMap({ nghttp2_session_get_stream_user_data($0.pointer, streamID) })
        else { return }
        Unmanaged<ClientStream>.fromOpaque(pointer)._withUnsafeGuaranteedRef(body)
    }

    func onHeader(streamID: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        withStream(streamID) { stream in
            guard stream.phase == .open else { return }
            if name.first == UInt8(ascii: ":") {
                // The only response pseudo-header is :status (nghttp2 checks).
                var status = 0
                for byte in value where byte >= 48 && byte <= 57 { status = status * 10 + Int(byte - 48) }
                if stream.status >= 100 && stream.status < 200 { stream.clearHeaders() }
                stream.status = status
                return
            }
            stream.appendHeader(name: name, value: value)
        }
    }

    func onData(streamID: Int32, bytes: UnsafeRawBufferPointer) {
        guard let stream = stream(for: streamID), stream.phase == .open else { return }
        if stream.responseBody.count + bytes.count > configuration.maximumResponseBodySize {
            resetStream(stream)
            finish(
                stream,
                throwing: HTTP2Error(
                    code: .responseTooLarge,
                    isSafeToRetry: false,
                    message: "the response body exceeds \(configuration.maximumResponseBodySize) bytes"
                )
            )
            return
        }
        stream.responseBody.append(contentsOf: bytes)
    }

    func onFrameReceived(_ frame: UnsafePointer<nghttp2_frame>) {
        guard phase != .closed else { return }
        let header = frame.pointee.hd
        switch Int(header.type) {
        case Int(NGHTTP2_SETTINGS.rawValue) where header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0:
            // Publish before anything resumes, so a caller sees the new limit with its response.
            if !settingsReceived {
                settingsReceived = true
                if phase == .connecting { phase = .ready }
                publishStatus()
                if let settingsWaiter {
                    self.settingsWaiter = nil
                    settingsWaiter.resume()
                }
            } else {
                publishStatus()
            }
        case Int(NGHTTP2_PING.rawValue) where header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0:
            pingOutstanding = false
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
            self.goAway = goAway
            metrics.goAways.increment(labels: [("error_code", goAway.errorCode.description)])
            logger.notice(
                "HTTP/2 GOAWAY received",
                metadata: [
                    "authority": .string(defaultAuthority), "last_stream_id": .int(goAway.lastStreamID),
                    "error_code": .string(goAway.errorCode.description), "debug": .string(goAway.debugText),
                ]
            )
            stopTakingRequests(goAwayError(safeToRetry: true))
            publishStatus()
        default:
            break
        }
    }

    func onFrameSent(_ frame: UnsafePointer<nghttp2_frame>) {
        guard Int(frame.pointee.hd.type) == Int(NGHTTP2_HEADERS.rawValue) else { return }
        withStream(frame.pointee.hd.stream_id) { stream in
            stream.headersSent = true
            stream.releaseRequestFields()
        }
    }

    /// A request's HEADERS could not be sent (it was reset while queued, a GOAWAY came, or the
    /// session is closing). nghttp2 opened the stream, with the stream's pointer as its user
    /// data, to prepare the frame, and closes it right after this callback, calling
    /// `on_stream_close` for the same stream id.
    func onFrameNotSent(_ frame: UnsafePointer<nghttp2_frame>, libraryError: Int32) {
        guard Int(frame.pointee.hd.type) == Int(NGHTTP2_HEADERS.rawValue), phase != .closed, let nghttp2 else {
            return
        }
        let streamID = frame.pointee.hd.stream_id
        guard let stream = open.first(withID: streamID) else { return }
        // The open list holds the last reference once the waiter has been resumed (a timed-out
        // or cancelled request): nghttp2 must no longer point at the stream when it is dropped,
        // or `on_stream_close` would read freed memory. Without user data it finds nothing.
        nghttp2_session_set_stream_user_data(nghttp2.pointer, streamID, nil)
        open.remove(stream)
        let error =
            goAway != nil
            ? goAwayError(safeToRetry: true)
            : HTTP2Error(
                code: .connectionClosed,
                isSafeToRetry: true,
                message: "the request could not be sent: \(String(cString: nghttp2_strerror(libraryError)))"
            )
        finish(stream, throwing: error)
    }

    func onStreamClose(streamID: Int32, errorCode: UInt32) {
        guard let stream = stream(for: streamID) else { return }
        open.remove(stream)
        guard stream.phase == .open else { return }
        let code = HTTP2ErrorCode(rawValue: errorCode)
        if code == .noError, stream.status >= 200 {
            finishWithResponse(stream)
            return
        }
        let error: HTTP2Error
        if let goAway, Int(streamID) > goAway.lastStreamID {
            error = goAwayError(safeToRetry: true)
        } else if code == .refusedStream {
            error = HTTP2Error(
                code: .streamRefused,
                isSafeToRetry: true,
                message: "the server refused the stream (REFUSED_STREAM); the request was not processed",
                errorCode: code
            )
        } else if code == .noError {
            error = HTTP2Error(
                code: .protocolError,
                isSafeToRetry: false,
                message: "the stream ended without a final response status"
            )
        } else {
            error = HTTP2Error(
                code: .streamReset,
                isSafeToRetry: false,
                message: "the server reset the stream (\(code))",
                errorCode: code
            )
        }
        finish(stream, throwing: error)
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
    withClientSession(userData) {
        $0.onHeader(
            streamID: frame.pointee.hd.stream_id,
            name: UnsafeRawBufferPointer(start: name, count: nameLength),
            value: UnsafeRawBufferPointer(start: value, count: valueLength)
        )
    }
    return 0
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
/// ``ClientStream``, kept alive by the session's table of open streams.
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
