import CHeraldShims
import Glibc

/// A non-blocking TCP connection, optionally TLS, driven by one ``EventLoop``.
///
/// A channel reads whatever arrives and hands it to its ``ChannelHandler``; the handler appends
/// output with ``write(_:)`` and sends it with ``flush()``, so many small writes leave in one
/// system call (and, with TLS, one `SSL_write`). TLS WANT_READ/WANT_WRITE become epoll interest.
///
/// `@unchecked Sendable`: after ``connect(host:port:tls:timeout:eventLoop:handler:)`` hands it
/// over, or the listener creates it, every stored property is read and written only on
/// ``eventLoop``'s thread (each public method except ``eventLoop`` must be called there, checked
/// in debug builds). The type is `Sendable` so that a connected channel can be returned to the
/// task that asked for it.
///
/// Connecting, accepting and the TLS handshake are in `Channel+Connect.swift`; the state they
/// share with the I/O here is internal to HeraldIO for that reason only, and the same thread rule
/// holds for it.
public final class Channel: @unchecked Sendable {
    /// How ``close(mode:)`` ends the connection.
    public enum CloseMode: Sendable {
        /// Write what is buffered, send TLS close_notify, then close.
        case graceful
        /// Close the socket now: buffered output is dropped, nothing more is sent.
        case abort
    }

    enum State {
        case idle, connecting, handshaking, active, closed
    }

    /// The loop this channel runs on.
    public let eventLoop: EventLoop
    /// The peer's address.
    public let remoteAddress: SocketAddress

    var fd: Int32 = -1
    var state = State.idle
    var tls: TLSConnection?
    let tlsContext: TLSContext?
    let serverName: String?
    var handler: (any ChannelHandler)?
    private var interest = IOInterest(read: false, write: false)
    private var registered = false
    private var outbound = OutboundBuffer()
    private var readBuffer: UnsafeMutableRawBufferPointer
    private var writeBlocked = false
    private var writeWantsRead = false
    private var readWantsWrite = false
    private var closeAfterFlush = false
    var cancelled = false
    var activation: UnsafeContinuation<Void, any Error>?
    var connectTimer: TimerHandle?

    /// The TLS version the handshake agreed on (nil for cleartext).
    public internal(set) var tlsVersion: TLSConfiguration.Version?
    /// The ALPN protocol the TLS handshake selected (nil for cleartext or none).
    public internal(set) var applicationProtocol: String?
    /// The client's certificate, on a server whose TLS configuration asks for one with
    /// ``TLSConfiguration/CertificateVerification/requestClientCertificate``; nil otherwise.
    public internal(set) var peerCertificate: TLSPeerCertificate?

    private static let readBufferSize = 64 * 1024
    private static let readsPerEvent = 16

    init(
        eventLoop: EventLoop,
        remoteAddress: SocketAddress,
        tls: TLSContext?,
        serverName: String?,
        handler: any ChannelHandler
    ) {
        self.eventLoop = eventLoop
        self.remoteAddress = remoteAddress
        self.tlsContext = tls
        self.serverName = serverName
        self.handler = handler
        self.readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 16)
    }

    deinit {
        readBuffer.deallocate()
        if fd >= 0 { Glibc.close(fd) }
    }

    // MARK: public API (loop thread unless noted)

    /// True while connected and not closed.
    public var isActive: Bool {
        eventLoop.assertInEventLoop()
        return state == .active
    }

    /// Bytes written with ``write(_:)`` but not yet accepted by the kernel.
    public var pendingWriteBytes: Int {
        eventLoop.assertInEventLoop()
        return outbound.count
    }

    /// Appends `bytes` to the output; nothing is sent until ``flush()``.
    /// - Throws: ``ChannelError`` with code ``ChannelError/Code/closed`` once the channel is
    ///   closed or closing (after ``close(mode:)``, or when the peer or an error closed it): the
    ///   bytes would never leave, and the caller should stop producing them.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(ChannelError) {
        eventLoop.assertInEventLoop()
        guard state == .active, !closeAfterFlush else {
            throw ChannelError(code: .closed, message: "write to a closed channel (\(remoteAddress))")
        }
        outbound.append(bytes)
    }

    /// Sends buffered output as far as the socket accepts it now; the rest goes when it is
    /// writable again, after which the handler hears ``ChannelHandler/channelWritable(_:)``.
    public func flush() {
        eventLoop.assertInEventLoop()
        guard state == .active, !writeBlocked, !writeWantsRead else { return }
        flushNow()
    }

    /// Closes the channel. The handler hears ``ChannelHandler/channelInactive(_:error:)`` once, if
    /// it had heard ``ChannelHandler/channelActive(_:)``. Safe to call more than once.
    public func close(mode: CloseMode = .graceful) {
        eventLoop.assertInEventLoop()
        switch state {
        case .closed:
            return
        case .idle, .connecting, .handshaking:
            finishClose(error: ChannelError(code: .closed, message: "channel closed"), closeNotify: false)
        case .active:
            if mode == .graceful, !outbound.isEmpty {
                closeAfterFlush = true
                if !writeBlocked && !writeWantsRead { flushNow() }
                return
            }
            finishClose(error: nil, closeNotify: mode == .graceful)
        }
    }

    // MARK: readiness

    func setInterest(_ wanted: IOInterest) {
        guard state != .closed, fd >= 0 else { return }
        do {
            if registered {
                try eventLoop.reregister(fd: fd, interest: wanted)
            } else {
                try eventLoop.register(fd: fd, interest: wanted, handler: self)
                registered = true
            }
            interest = wanted
        } catch {
            finishClose(error: error, closeNotify: false)
        }
    }

    private func updateActiveInterest() {
        setInterest(IOInterest(read: true, write: writeBlocked || readWantsWrite))
    }

    func readAvailable() {
        var reads = 0
        while state == .active {
            let result: TLSConnection.IOResult = tls?.read(into: readBuffer) ?? plainRead()
            switch result {
            case .bytes(let count):
                reads += 1
                handler?.channelRead(self, UnsafeRawBufferPointer(rebasing: readBuffer[0..<count]))
                if reads >= Self.readsPerEvent {
                    if tls?.hasBufferedBytes == true {
                        eventLoop.execute { [self] in if state == .active { readAvailable() } }
                    }
                    handler?.channelReadComplete(self)
                    return
                }
            case .wantRead:
                if reads > 0 { handler?.channelReadComplete(self) }
                return
            case .wantWrite:
                readWantsWrite = true
                updateActiveInterest()
                if reads > 0 { handler?.channelReadComplete(self) }
                return
            case .closed:
                if reads > 0 { handler?.channelReadComplete(self) }
                finishClose(error: nil, closeNotify: false)
                return
            case .failed(let error):
                finishClose(error: error, closeNotify: false)
                return
            }
        }
    }

    private func plainRead() -> TLSConnection.IOResult {
        let count = Glibc.read(fd, readBuffer.baseAddress, readBuffer.count)
        if count > 0 { return .bytes(count) }
        if count == 0 { return .closed }
        switch errno {
        case EAGAIN, EINTR: return .wantRead
        case ECONNRESET: return .closed
        case let code: return .failed(IOError(operation: "read", errno: code))
        }
    }

    private func plainWrite(_ bytes: UnsafeRawBufferPointer) -> TLSConnection.IOResult {
        let count = cherald_send(fd, bytes.baseAddress, bytes.count)
        if count >= 0 { return .bytes(count) }
        switch errno {
        case EAGAIN, EINTR: return .wantWrite
        case EPIPE, ECONNRESET: return .closed
        case let code: return .failed(IOError(operation: "write", errno: code))
        }
    }

    private func flushNow() {
        let waited = writeBlocked
        writeBlocked = false
        while !outbound.isEmpty {
            let result = outbound.withReadableBytes { bytes -> TLSConnection.IOResult in
                tls?.write(bytes) ?? plainWrite(bytes)
            }
            switch result {
            case .bytes(let count):
                outbound.consume(count)
            case .wantWrite:
                writeBlocked = true
                updateActiveInterest()
                return
            case .wantRead:
                writeWantsRead = true
                return
            case .closed:
                finishClose(error: nil, closeNotify: false)
                return
            case .failed(let error):
                finishClose(error: error, closeNotify: false)
                return
            }
        }
        if closeAfterFlush {
            finishClose(error: nil, closeNotify: true)
            return
        }
        if interest.write { updateActiveInterest() }
        if waited { handler?.channelWritable(self) }
    }

    func finishClose(error: (any Error)?, closeNotify: Bool) {
        guard state != .closed else { return }
        let wasActive = state == .active
        state = .closed
        if let connectTimer {
            eventLoop.cancelTimer(connectTimer)
            self.connectTimer = nil
        }
        if registered {
            eventLoop.deregister(fd: fd)
            registered = false
        }
        if closeNotify { tls?.shutdown() }
        tls = nil
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
        outbound.removeAll()
        if let activation {
            self.activation = nil
            activation.resume(throwing: error ?? ChannelError(code: .closed, message: "connection closed"))
        }
        let handler = self.handler
        self.handler = nil
        if wasActive, let handler {
            eventLoop.execute { handler.channelInactive(self, error: error) }
        }
    }
}

extension Channel: IOEventHandler {
    func ioReady(_ readiness: IOReadiness) {
        switch state {
        case .connecting:
            finishConnect()
        case .handshaking:
            continueHandshake()
        case .active:
            if readiness.writable || readiness.error {
                if readWantsWrite {
                    readWantsWrite = false
                    updateActiveInterest()
                    readAvailable()
                }
                if writeBlocked, state == .active { flushNow() }
            }
            if state == .active, readiness.readable || readiness.hangup || readiness.error {
                if writeWantsRead {
                    writeWantsRead = false
                    flushNow()
                }
                if state == .active { readAvailable() }
            }
        case .idle, .closed:
            break
        }
    }

    func loopShutdown() {
        finishClose(error: ChannelError(code: .closed, message: "event loop shut down"), closeNotify: false)
    }
}
