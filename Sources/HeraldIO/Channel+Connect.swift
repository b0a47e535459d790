import CHeraldShims
import Glibc

// Establishing a channel: TCP connect (outbound) or an accepted socket (inbound), then the TLS
// handshake, until the channel is active. Loop thread, as everything in Channel.
extension Channel {
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

    func finishConnect() {
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

    func continueHandshake() {
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
            tlsVersion = tls.negotiatedVersion
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
