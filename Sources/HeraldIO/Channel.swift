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
public final class Channel: @unchecked Sendable {
    /// How ``close(mode:)`` ends the connection.
    public enum CloseMode: Sendable {
        /// Write what is buffered, send TLS close_notify, then close.
        case graceful
        /// Close the socket now: buffered output is dropped, nothing more is sent.
        case abort
    }

    private enum State {
        case idle, connecting, handshaking, active, closed
    }

    /// The loop this channel runs on.
    public let eventLoop: EventLoop
    /// The peer's address.
    public let remoteAddress: SocketAddress

    private var fd: Int32 = -1
    private var state = State.idle
    private var tls: TLSConnection?
    private let tlsContext: TLSContext?
    private let serverName: String?
    private var handler: (any ChannelHandler)?
    private var interest = IOInterest(read: false, write: false)
    private var registered = false
    private var outbound = OutboundBuffer()
    private var readBuffer: UnsafeMutableRawBufferPointer
    private var writeBlocked = false
    private var writeWantsRead = false
    private var readWantsWrite = false
    private var closeAfterFlush = false
    private var cancelled = false
    private var activation: UnsafeContinuation<Void, any Error>?
    private var connectTimer: TimerHandle?

    /// The ALPN protocol the TLS handshake selected (nil for cleartext or none).
    public private(set) var applicationProtocol: String?
    /// The client's certificate, on a server whose TLS configuration asks for one with
    /// ``TLSConfiguration/CertificateVerification/requestClientCertificate``; nil otherwise.
    public private(set) var peerCertificate: TLSPeerCertificate?

    private static let readBufferSize = 64 * 1024
    private static let readsPerEvent = 16

    private init(
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

    /// Appends `bytes` to the output; nothing is sent until ``flush()``. Ignored once closed.
    public func write(_ bytes: UnsafeRawBufferPointer) {
        eventLoop.assertInEventLoop()
        guard state == .active, !closeAfterFlush else { return }
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

    // MARK: connecting

    /// Opens a TCP connection to `host` (resolved afresh with ``Resolver``; each address in turn)
    /// and, when `tls` is given, completes the TLS handshake; for a client context with ALPN
    /// protocols, the server must select one of them.
    ///
    /// `handler` hears ``ChannelHandler/channelActive(_:)`` on the loop before this returns.
    /// Cancelling the task closes the attempt and throws `CancellationError`.
    ///
    /// - Parameters:
    ///   - tls: a client context, or nil for cleartext.
    ///   - timeout: for everything (resolution, TCP, TLS); each address gets what remains.
    /// - Throws: ``ChannelError``, ``IOError`` or ``TLSError``.
    public static func connect(
        host: String,
        port: Int,
        tls: TLSContext?,
        timeout: Duration,
        eventLoop: EventLoop = .shared,
        handler: any ChannelHandler
    ) async throws -> Channel {
        let deadline = EventLoop.monotonicNanoseconds() &+ timeout.nanoseconds
        let addresses = try await Resolver.resolve(host: host, port: port)
        let serverName = tls?.configuration.serverNameOverride ?? host
        var lastError: (any Error)?
        for address in addresses {
            try Task.checkCancellation()
            guard EventLoop.monotonicNanoseconds() < deadline else { break }
            let channel = Channel(
                eventLoop: eventLoop,
                remoteAddress: address,
                tls: tls,
                serverName: serverName,
                handler: handler
            )
            do {
                try await channel.connect(deadline: deadline)
                return channel
            } catch let error as TLSError {
                throw error  // another address would present the same certificate
            } catch {
                if error is CancellationError { throw error }
                lastError = error
            }
        }
        throw lastError
            ?? ChannelError(code: .connectTimeout, message: "connect to \(host):\(port) timed out after \(timeout)")
    }

    private func connect(deadline: UInt64) async throws {
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                eventLoop.execute { self.beginConnect(deadline: deadline, continuation: continuation) }
            }
        } onCancel: {
            eventLoop.execute { self.cancelConnect() }
        }
    }

    private func beginConnect(deadline: UInt64, continuation: UnsafeContinuation<Void, any Error>) {
        activation = continuation
        if cancelled {
            finishClose(error: CancellationError(), closeNotify: false)
            return
        }
        connectTimer = eventLoop.scheduleTimer(at: deadline) { [self] in
            connectTimer = nil
            finishClose(
                error: ChannelError(code: .connectTimeout, message: "connect to \(remoteAddress) timed out"),
                closeNotify: false
            )
        }
        fd = cherald_socket_stream(remoteAddress.family)
        guard fd >= 0 else {
            finishClose(error: IOError(operation: "socket", errno: errno), closeNotify: false)
            return
        }
        _ = cherald_set_nodelay(fd)
        let result = remoteAddress.withSockAddr { Glibc.connect(fd, $0, $1) }
        if result == 0 {
            connected()
        } else if errno == EINPROGRESS || errno == EINTR {
            state = .connecting
            setInterest(IOInterest(read: false, write: true))
        } else {
            finishClose(error: IOError(operation: "connect(\(remoteAddress))", errno: errno), closeNotify: false)
        }
    }

    private func cancelConnect() {
        cancelled = true
        if state != .active && state != .closed && activation != nil {
            finishClose(error: CancellationError(), closeNotify: false)
        }
    }

    private func finishConnect() {
        let error = cherald_socket_error(fd)
        if error != 0 {
            let code = error < 0 ? errno : error
            finishClose(error: IOError(operation: "connect(\(remoteAddress))", errno: code), closeNotify: false)
            return
        }
        connected()
    }

    /// TCP is up: start TLS or become active.
    private func connected() {
        guard let tlsContext else {
            activate()
            return
        }
        do {
            tls = try TLSConnection(context: tlsContext, fd: fd, serverName: serverName)
        } catch {
            finishClose(error: error, closeNotify: false)
            return
        }
        state = .handshaking
        continueHandshake()
    }

    private func continueHandshake() {
        guard let tls else { return }
        switch tls.handshake() {
        case .done:
            activate()
        case .wantRead:
            setInterest(IOInterest(read: true, write: false))
        case .wantWrite:
            setInterest(IOInterest(read: true, write: true))
        case .failed(let error):
            finishClose(error: error, closeNotify: false)
        }
    }

    private func activate() {
        if let connectTimer {
            eventLoop.cancelTimer(connectTimer)
            self.connectTimer = nil
        }
        if let tls {
            applicationProtocol = tls.negotiatedProtocol
            if tls.context.configuration.certificateVerification == .requestClientCertificate {
                peerCertificate = tls.peerCertificate
            }
            let wanted = tls.context.configuration.applicationProtocols
            if tls.context.configuration.role == .client, !wanted.isEmpty,
                !wanted.contains(where: { $0 == applicationProtocol })
            {
                let selected = applicationProtocol.map { "selected \($0)" } ?? "selected no protocol"
                finishClose(
                    error: TLSError(
                        code: .applicationProtocolNotNegotiated,
                        message: "the server at \(remoteAddress) did not select \(wanted.joined(separator: " or ")) "
                            + "via ALPN (\(selected)); it does not speak HTTP/2 over TLS here"
                    ),
                    closeNotify: true
                )
                return
            }
        }
        state = .active
        setInterest(IOInterest(read: true, write: false))
        handler?.channelActive(self)
        if let activation {
            self.activation = nil
            activation.resume()
        }
        if state == .active, tls?.hasBufferedBytes == true {
            readAvailable()
        }
    }

    // MARK: accepted connections (used by TCPListener)

    /// Wraps an accepted socket. Loop thread.
    static func accepted(
        fd: Int32,
        remoteAddress: SocketAddress,
        tls: TLSContext?,
        eventLoop: EventLoop,
        makeHandler: (Channel) -> any ChannelHandler
    ) -> Channel {
        let channel = Channel(
            eventLoop: eventLoop,
            remoteAddress: remoteAddress,
            tls: tls,
            serverName: nil,
            handler: PlaceholderHandler.instance
        )
        channel.fd = fd
        _ = cherald_set_nodelay(fd)
        channel.handler = makeHandler(channel)
        channel.connected()
        return channel
    }

    // MARK: readiness

    private func setInterest(_ wanted: IOInterest) {
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

    private func readAvailable() {
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

    private func finishClose(error: (any Error)?, closeNotify: Bool) {
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

/// Stands in for the handler while an accepted channel is being set up.
private final class PlaceholderHandler: ChannelHandler {
    static let instance = PlaceholderHandler()
    func channelActive(_ channel: Channel) {}
    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {}
    func channelReadComplete(_ channel: Channel) {}
    func channelWritable(_ channel: Channel) {}
    func channelInactive(_ channel: Channel, error: (any Error)?) {}
}
