public import HeraldCore
public import HeraldIO
import Synchronization

/// An HTTP/2 server (TLS with ALPN `h2`, or cleartext prior-knowledge) that calls an async
/// handler per request: for tests and the APNs simulator.
///
/// The socket is bound when `init` returns, so ``port`` is known (also for port 0); connections
/// are served while ``run()`` runs. Each request runs its handler in a child task of `run()`.
///
/// ```swift
/// let server = try HTTP2Server(configuration: .init(), tls: context) { request in
///     HTTP2ServerResponse(status: 200, body: request.body)
/// }
/// try await withThrowingTaskGroup(of: Void.self) { group in
///     group.addTask { try await server.run() }
///     // … connect to server.port …
///     server.triggerGracefulShutdown()
/// }
/// ```
public final class HTTP2Server: Service {
    /// The request handler.
    public typealias Handler = @Sendable (HTTP2ServerRequest) async -> HTTP2ServerResponse

    /// The configuration the server was made with.
    public let configuration: Configuration
    private let core: HTTP2ServerCore
    private let handler: Handler

    /// The bound port.
    public var port: Int { core.listener.port }

    /// Binds and listens on ``Configuration/host`` and ``Configuration/port``.
    /// - Parameter tls: a server ``TLSContext``, or nil for cleartext HTTP/2.
    /// - Throws: ``IOError`` when the address cannot be bound.
    public init(configuration: Configuration, tls: TLSContext?, handler: @escaping Handler) throws {
        self.configuration = configuration
        self.handler = handler
        let listener = try TCPListener(
            host: configuration.host,
            port: configuration.port,
            eventLoop: configuration.eventLoop
        )
        self.core = HTTP2ServerCore(configuration: configuration, listener: listener, tls: tls)
    }

    /// Serves until ``triggerGracefulShutdown()`` (GOAWAY to every connection; returns once they
    /// have finished) or cancellation (connections are closed at once).
    public func run() async throws {
        let (requests, continuation) = AsyncStream.makeStream(
            of: HTTP2ServerCore.Work.self,
            bufferingPolicy: .unbounded
        )
        let handler = self.handler
        let core = self.core
        await withTaskCancellationHandler {
            core.start(continuation)
            await withDiscardingTaskGroup { group in
                for await work in requests {
                    group.addTask {
                        let response = await handler(work.request)
                        work.session.execute { $0.respond(work.stream, with: response) }
                    }
                }
            }
        } onCancel: {
            core.stopNow()
        }
    }

    /// Stops accepting connections, sends GOAWAY to each, and lets ``run()`` return once they
    /// have answered their open streams and closed. Any thread, any time.
    public func triggerGracefulShutdown() {
        core.shutDownGracefully()
    }
}

extension HTTP2Server {
    /// Settings of an ``HTTP2Server``.
    public struct Configuration: Sendable {
        /// Address to bind; default `127.0.0.1`.
        public var host = "127.0.0.1"
        /// Port to bind; 0 (the default) picks a free one, see ``HTTP2Server/port``.
        public var port = 0
        /// SETTINGS_MAX_CONCURRENT_STREAMS sent when a connection starts; change it per connection
        /// with ``HTTP2ServerConnection/setMaxConcurrentStreams(_:)``. Default 100.
        public var maxConcurrentStreams = 100
        /// SETTINGS_INITIAL_WINDOW_SIZE for request bodies. Default 65,535 (the protocol's).
        public var initialWindowSize = 65_535
        /// Larger request bodies are answered 413 without calling the handler. Default 1 MiB.
        public var maximumRequestBodySize = 1 << 20
        /// Close connections that send nothing (not even PING) for this long; nil (default) never.
        public var idleTimeout: Duration?
        /// Whether new connections acknowledge PINGs. Default true.
        public var answersPings = true
        /// Called on the event loop when a connection is established (after TLS).
        public var onConnection: (@Sendable (HTTP2ServerConnection) -> Void)?
        /// The loop that runs the listener and the connections. Default ``EventLoop/shared``.
        public var eventLoop: EventLoop = .shared
        /// Where connection-level problems are logged (debug level).
        public var logger = Logger(label: "herald.http2.server")

        public init() {}
    }
}

/// The server's shared state: the listener, the live sessions and the stream of requests for
/// `run()`.
///
/// `@unchecked Sendable`: `listener`, `tls`, `configuration` are immutable; `state` is a
/// `Mutex`; `sessions`, `requests`, `nextID` and `shuttingDown` are touched only on the event
/// loop thread.
final class HTTP2ServerCore: @unchecked Sendable {
    struct Work: Sendable {
        let request: HTTP2ServerRequest
        let session: ServerSession
        let stream: ServerStream
    }

    private enum Phase {
        case idle, running, stopping, stopped
    }

    let listener: TCPListener
    private let tls: TLSContext?
    private let configuration: HTTP2Server.Configuration
    private let state = Mutex(Phase.idle)

    // Loop-thread state.
    private var sessions: [Int: ServerSession] = [:]
    private var requests: AsyncStream<Work>.Continuation?
    private var nextID = 1
    private var shuttingDown = false

    init(configuration: HTTP2Server.Configuration, listener: TCPListener, tls: TLSContext?) {
        self.configuration = configuration
        self.listener = listener
        self.tls = tls
    }

    private var eventLoop: EventLoop { configuration.eventLoop }

    func start(_ continuation: AsyncStream<Work>.Continuation) {
        let proceed = state.withLock { phase -> Bool in
            guard phase == .idle else { return false }
            phase = .running
            return true
        }
        guard proceed else {
            continuation.finish()
            return
        }
        eventLoop.execute { [self] in
            requests = continuation
            listener.start(tls: tls) { [self] channel in
                makeSession(for: channel)
            }
        }
    }

    private func makeSession(for channel: Channel) -> any ChannelHandler {
        let id = nextID
        nextID += 1
        do {
            return try ServerSession(id: id, core: self, configuration: configuration)
        } catch {
            configuration.logger.error(
                "cannot create an HTTP/2 server session",
                metadata: ["error": .string("\(error)")]
            )
            channel.close(mode: .abort)
            return ClosedHandler()
        }
    }

    func shutDownGracefully() {
        let wasRunning = state.withLock { phase -> Bool in
            defer { if phase == .idle || phase == .running { phase = .stopping } }
            return phase == .running
        }
        guard wasRunning else { return }
        eventLoop.execute { [self] in
            shuttingDown = true
            listener.close()
            for session in sessions.values {
                session.goAway(lastStreamID: nil, errorCode: .noError, debugData: [], closeImmediately: false)
            }
            finishIfDone()
        }
    }

    func stopNow() {
        state.withLock { $0 = .stopped }
        eventLoop.execute { [self] in
            shuttingDown = true
            listener.close()
            for session in sessions.values { session.abort() }
            requests?.finish()
            requests = nil
        }
    }

    // MARK: loop thread

    func register(_ session: ServerSession) {
        sessions[session.id] = session
        if shuttingDown {
            session.goAway(lastStreamID: nil, errorCode: .noError, debugData: [], closeImmediately: true)
        }
    }

    func unregister(_ session: ServerSession) {
        sessions[session.id] = nil
        finishIfDone()
    }

    /// Hands a complete request to `run()`; false when the server no longer runs handlers.
    func dispatch(_ work: Work) -> Bool {
        guard let requests else { return false }
        if case .terminated = requests.yield(work) { return false }
        return true
    }

    private func finishIfDone() {
        guard shuttingDown, sessions.isEmpty else { return }
        requests?.finish()
        requests = nil
    }
}

/// The handler of a channel whose session could not be created; it is closed at once.
private final class ClosedHandler: ChannelHandler {
    func channelActive(_ channel: Channel) { channel.close(mode: .abort) }
    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {}
    func channelReadComplete(_ channel: Channel) {}
    func channelWritable(_ channel: Channel) {}
    func channelInactive(_ channel: Channel, error: (any Error)?) {}
}
