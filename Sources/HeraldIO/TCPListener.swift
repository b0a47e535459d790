import CHeraldShims
import Glibc

/// A listening TCP socket whose accepted connections become ``Channel``s on one ``EventLoop``.
///
/// The socket is bound and listening when `init` returns (so ``port`` is known, also for port 0);
/// connections are accepted once ``start(tls:makeHandler:)`` has run.
///
/// `@unchecked Sendable`: `port`, `host` and `eventLoop` are immutable; the descriptor and the
/// accept callback are read and written only on the loop thread (``start(tls:makeHandler:)`` and
/// ``close()`` hop there).
public final class TCPListener: @unchecked Sendable {
    /// The loop that accepts and runs the channels.
    public let eventLoop: EventLoop
    /// The bound address's host, as given.
    public let host: String
    /// The bound port (the kernel's choice when 0 was asked for).
    public let port: Int

    private var fd: Int32
    private var tls: TLSContext?
    private var makeHandler: ((Channel) -> any ChannelHandler)?
    private var registered = false
    private var pauseTimer: TimerHandle?

    /// How long accepting pauses after accept(2) fails for want of a descriptor or memory
    /// (EMFILE, ENFILE, ENOBUFS, ENOMEM). The connection waiting in the backlog keeps the socket
    /// readable, and the loop's epoll is level-triggered: without the pause the loop would call
    /// accept again at once, forever, at 100% CPU, until a descriptor is freed. Internal so that
    /// tests can change it; loop thread.
    var exhaustionPause: Duration = .milliseconds(100)
    /// accept4(2) as the listener calls it; tests substitute failures. Loop thread.
    var acceptCall: (Int32, UnsafeMutablePointer<sockaddr_storage>, UnsafeMutablePointer<socklen_t>) -> Int32 = {
        cherald_accept($0, $1, $2)
    }
    /// How many times accepting paused (see ``exhaustionPause``). Loop thread.
    private(set) var exhaustionPauses = 0
    /// True while accepting is paused. Loop thread.
    var isPaused: Bool { pauseTimer != nil }

    /// Binds and listens.
    /// - Parameters:
    ///   - host: a numeric address (`127.0.0.1`, `::`, `0.0.0.0`) or a name, resolved now
    ///     (blocking; use numeric addresses on hot paths).
    ///   - port: 0 for any free port.
    /// - Throws: ``IOError`` or ``ChannelError``.
    public init(host: String, port: Int, backlog: Int32 = 1024, eventLoop: EventLoop = .shared) throws {
        self.eventLoop = eventLoop
        self.host = host
        let address = try SocketAddress.resolveBlocking(host: host, port: port, passive: true)[0]
        let fd = cherald_socket_stream(address.family)
        guard fd >= 0 else { throw IOError(operation: "socket", errno: errno) }
        _ = cherald_set_reuseaddr(fd)
        if address.isIPv6 { _ = cherald_set_v6only(fd, 0) }
        let bound = address.withSockAddr { Glibc.bind(fd, $0, $1) }
        guard bound == 0 else {
            let code = errno
            Glibc.close(fd)
            throw IOError(operation: "bind(\(address))", errno: code)
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw IOError(operation: "listen(\(address))", errno: code)
        }
        self.fd = fd
        self.port = Int(cherald_local_port(fd))
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
    }

    /// Starts accepting. Each accepted connection becomes a channel (TLS server handshake first
    /// when `tls` is given); `makeHandler` is called on the loop thread to create its handler,
    /// which hears ``ChannelHandler/channelActive(_:)`` once the handshake is done. Connections
    /// whose handshake fails are closed without reaching the handler.
    public func start(tls: TLSContext?, makeHandler: @escaping @Sendable (Channel) -> any ChannelHandler) {
        eventLoop.execute { [self] in
            guard fd >= 0, !registered else { return }
            self.tls = tls
            self.makeHandler = makeHandler
            do {
                try eventLoop.register(fd: fd, interest: IOInterest(read: true, write: false), handler: self)
                registered = true
            } catch {
                closeNow()
            }
        }
    }

    /// Stops accepting and closes the socket. Existing channels are not affected. Any thread.
    public func close() {
        eventLoop.execute { [self] in closeNow() }
    }

    private func closeNow() {
        guard fd >= 0 else { return }
        if let pauseTimer {
            eventLoop.cancelTimer(pauseTimer)
            self.pauseTimer = nil
        }
        if registered {
            eventLoop.deregister(fd: fd)
            registered = false
        }
        Glibc.close(fd)
        fd = -1
        makeHandler = nil
    }
}

extension TCPListener: IOEventHandler {
    func ioReady(_ readiness: IOReadiness) {
        guard let makeHandler else { return }
        for _ in 0..<64 {
            guard fd >= 0 else { return }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = acceptCall(fd, &storage, &length)
            if client < 0 {
                switch errno {
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    pause()
                    return
                case ECONNABORTED, EPROTO, EPERM:
                    continue  // that connection is gone or refused; the next may be fine
                default:
                    return  // EAGAIN: the backlog is empty
                }
            }
            let remote = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0, length: Int(length)) }
            }
            guard let remote else {
                Glibc.close(client)
                continue
            }
            _ = Channel.accepted(
                fd: client,
                remoteAddress: remote,
                tls: tls,
                eventLoop: eventLoop,
                makeHandler: makeHandler
            )
        }
    }

    func loopShutdown() {
        closeNow()
    }

    /// Stops watching the socket for ``exhaustionPause``, then watches it again (and accepts what
    /// waited, once a descriptor is free).
    private func pause() {
        guard registered, pauseTimer == nil else { return }
        do {
            try eventLoop.reregister(fd: fd, interest: IOInterest(read: false, write: false))
        } catch {
            closeNow()
            return
        }
        exhaustionPauses += 1
        pauseTimer = eventLoop.scheduleTimer(after: exhaustionPause) { [weak self] in
            guard let self else { return }
            pauseTimer = nil
            resumeAccepting()
        }
    }

    /// Watches the socket again after a pause. Internal so that tests can end a pause early;
    /// loop thread.
    func resumeAccepting() {
        if let pauseTimer {
            eventLoop.cancelTimer(pauseTimer)
            self.pauseTimer = nil
        }
        guard registered, fd >= 0 else { return }
        do {
            try eventLoop.reregister(fd: fd, interest: IOInterest(read: true, write: false))
        } catch {
            closeNow()
        }
    }
}
