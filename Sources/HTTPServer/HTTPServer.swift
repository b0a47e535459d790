public import HTTPRouting
public import HeraldCore
import Synchronization

/// An HTTP/1.1 server on libmicrohttpd that answers with a responder wrapped in middleware.
///
/// libmicrohttpd's own threads do the I/O (`poll`, keep-alive, limits, timeouts). When a request
/// is complete, the middleware and responder get it on that thread
/// (``HTTPResponder/respond(to:answer:)``): an answer given before that call returns is sent at
/// once. Otherwise its connection is suspended until the answer comes, from a callback or from a
/// task the handler started in `run()`'s task group (an async route's); the connection is then
/// resumed. No thread of either side ever waits for the other.
///
/// ```swift
/// var router = Router()
/// router.get("/healthz") { _ in .json(["status": "ok"]) }
/// let server = HTTPServer(configuration: .init(), responder: router, logger: Logger(label: "herald.http"))
/// try await ServiceGroup(services: [server], logger: logger).run()
/// ```
///
/// Limits: bodies over ``Configuration/maxBodySize`` get 413 (at once when `Content-Length`
/// says so, otherwise when the limit is crossed, without buffering more); request headers over
/// ``Configuration/maxHeaderSize`` get 431; clients idle for ``Configuration/connectionTimeout``
/// are disconnected, and so are clients whose request is not in whole within
/// ``Configuration/requestTimeout``. Route, method and admission (``HTTPResponder/admit(_:)``)
/// are decided on the headers: a 401, 404, 405 or 413 is sent without reading the body, and the
/// connection then closes. Errors the server itself sends use the API's JSON error shape, except the
/// few that libmicrohttpd answers before a request exists (a malformed request line: 400;
/// headers far over the limit: 431), which have a short plain body.
public final class HTTPServer: Service {
    /// Listen address, limits and threads.
    public struct Configuration: Sendable {
        /// A numeric IPv4 or IPv6 address, or `localhost`. `::` accepts IPv4 too.
        public var host: String = "0.0.0.0"
        /// 0 picks a free port; ``HTTPServer/listeningPort()`` tells which.
        public var port: Int = 3000
        /// Largest request body in bytes; larger ones get 413 and are never buffered.
        public var maxBodySize: Int = 1 << 20
        /// The setting that sets ``maxBodySize`` (`HERALD_MAX_BODY_BYTES`), named in the 413 of a
        /// body over it so that its reader knows what to raise; `nil`: none named. A route's own
        /// limit is not the setting's, and its 413 says so.
        public var maxBodySizeSetting: String?
        /// Largest request line plus headers, in bytes; larger ones get 431.
        public var maxHeaderSize: Int = 16 * 1024
        /// Open connections at most; libmicrohttpd closes further ones at once.
        public var maxConnections: Int = 1024
        /// A connection with no traffic for this long (idle keep-alive, or a client stalling
        /// mid-request) is closed; rounded up to whole seconds. A request being answered does
        /// not count as idle.
        public var connectionTimeout: Duration = .seconds(30)
        /// The most a request may take to arrive whole, headers and body, counted from the
        /// connection's opening or its previous response; a connection past it is closed without
        /// an answer, however steadily its client trickles bytes. `.zero`: no deadline.
        public var requestTimeout: Duration = .seconds(30)
        /// Open connections at most from one client address; further ones are closed at once.
        /// `nil`: no limit (behind a proxy every client has the proxy's address).
        public var maxConnectionsPerIP: Int?
        /// How long graceful shutdown waits for requests in flight before closing them.
        public var shutdownTimeout: Duration = .seconds(10)
        /// libmicrohttpd threads doing socket I/O. Handlers are called on these
        /// (``HTTPResponder/respond(to:answer:)``); async ones then run on Swift's pool.
        public var threadCount: Int = 2

        public init() {}
    }

    public let configuration: Configuration
    private let responder: MiddlewareChain
    private let logger: Logger
    private let lifecycle = Mutex(ServerLifecycle())
    let statistics = ServerStatistics()
    /// Connections closed because their request was not in whole within the deadline.
    private let deadlineCloses: Counter

    /// A server with ``defaultMiddleware(logger:metrics:)``.
    public convenience init(
        configuration: Configuration,
        responder: any HTTPResponder,
        logger: Logger,
        metrics: MetricsRegistry = .shared
    ) {
        self.init(
            configuration: configuration,
            responder: responder,
            middleware: Self.defaultMiddleware(logger: logger, metrics: metrics),
            logger: logger,
            metrics: metrics
        )
    }

    /// A server with the given middleware, the first element outermost.
    ///
    /// - Parameter metrics: where the server reports `herald_http_requests_in_flight` (a gauge);
    ///   per-request metrics come from ``MetricsMiddleware``, which takes its own registry.
    public init(
        configuration: Configuration,
        responder: any HTTPResponder,
        middleware: [any HTTPMiddleware],
        logger: Logger,
        metrics: MetricsRegistry = .shared
    ) {
        self.configuration = configuration
        self.responder = MiddlewareChain(middleware: middleware, responder: responder)
        self.logger = logger
        self.deadlineCloses = metrics.counter(
            "herald_http_request_deadline_closes_total",
            help: "Connections closed because their request did not arrive whole within the request timeout."
        )
        // Read from the server's own count when scraped: no gauge update per request.
        metrics.gauge("herald_http_requests_in_flight", help: "HTTP requests received and not yet answered.") {
            [weak statistics] in statistics.map { Double($0.inFlight) }
        }
    }

    /// Request id, access log, metrics, then errors to JSON (innermost).
    public static func defaultMiddleware(logger: Logger, metrics: MetricsRegistry = .shared) -> [any HTTPMiddleware] {
        [
            RequestIDMiddleware(),
            AccessLogMiddleware(logger: logger),
            MetricsMiddleware(metrics: metrics),
            ErrorMiddleware(logger: logger),
        ]
    }

    /// Listens and serves until ``triggerGracefulShutdown()`` or cancellation.
    ///
    /// Graceful shutdown: new connections are refused at once; requests in flight are answered
    /// (with `Connection: close`) for up to ``Configuration/shutdownTimeout``; then handlers still
    /// running are cancelled, their connections closed and the daemon stopped. Cancelling the
    /// task that runs `run()` does the same without the wait. Either way `run()` returns once the
    /// cancelled handlers have returned, so handlers should honour cancellation.
    ///
    /// - Throws: ``HTTPServerError`` when the server was already started, or cannot listen.
    public func run() async throws {
        let (events, continuation) = AsyncStream.makeStream(of: ServerEvent.self)
        switch lifecycle.withLock({ $0.start(continuation) }) {
        case .alreadyStarted:
            throw HTTPServerError.alreadyRunning
        case .finishEarly(let waiters):
            continuation.finish()
            for waiter in waiters { waiter.resume(throwing: HTTPServerError.notListening) }
            return
        case .start:
            break
        }
        defer {
            continuation.finish()
            for waiter in lifecycle.withLock({ $0.finish() }) {
                waiter.resume(throwing: HTTPServerError.notListening)
            }
        }

        let core = HTTPServerCore(
            limits: .init(
                maxBodySize: configuration.maxBodySize,
                maxBodySizeSetting: configuration.maxBodySizeSetting,
                maxHeaderSize: configuration.maxHeaderSize,
                discardAllowance: max(configuration.maxBodySize, 64 * 1024)
            ),
            deadlines: configuration.requestTimeout > .zero
                ? RequestDeadlines(timeout: configuration.requestTimeout, closes: deadlineCloses) : nil,
            logger: logger,
            statistics: statistics,
            responder: responder,
            events: continuation
        )
        let daemon = try MHDDaemon(configuration: configuration, core: core)
        for waiter in lifecycle.withLock({ $0.bound(port: daemon.port) }) { waiter.resume(returning: daemon.port) }
        logger.debug("listening", metadata: ["host": .string(configuration.host), "port": .int(daemon.port)])

        await serve(events, continuation: continuation, core: core, daemon: daemon)
        logger.debug("stopped", metadata: ["port": .int(daemon.port)])
    }

    private func serve(
        _ events: AsyncStream<ServerEvent>,
        continuation: AsyncStream<ServerEvent>.Continuation,
        core: HTTPServerCore,
        daemon: MHDDaemon
    ) async {
        let shutdownTimeout = configuration.shutdownTimeout
        await withDiscardingTaskGroup { group in
            var draining = false
            loop: for await event in events {
                switch event {
                case .run(let work):
                    group.addTask { await work() }
                case .shutdown:
                    guard !draining else { continue }
                    draining = true
                    daemon.quiesce()
                    if core.beginDraining() { break loop }
                    group.addTask {
                        guard (try? await Task.sleep(for: shutdownTimeout)) != nil else { return }
                        continuation.yield(.drainTimedOut)
                    }
                case .drained, .drainTimedOut:
                    break loop
                }
            }
            // Shutdown finished draining, timed out, or run() was cancelled (the stream ended).
            daemon.quiesce()
            group.cancelAll()
            core.close()
            await daemon.stop()
        }
    }

    /// Starts graceful shutdown; see ``run()``. Safe from any thread, more than once, and before
    /// `run()` (which then returns at once).
    public func triggerGracefulShutdown() {
        lifecycle.withLock { $0.requestShutdown() }?.yield(.shutdown)
    }

    /// The port the server listens on, once it does; waits until then.
    ///
    /// - Throws: ``HTTPServerError/notListening`` if `run()` ends (or failed) before listening;
    ///   `CancellationError` if the caller is cancelled while waiting.
    public func listeningPort() async throws -> Int {
        let id = lifecycle.withLock { $0.makeWaiterID() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int, any Error>) in
                switch lifecycle.withLock({ $0.addWaiter(id, continuation) }) {
                case .resume(let port): continuation.resume(returning: port)
                case .fail(let error): continuation.resume(throwing: error)
                case .wait: break
                }
            }
        } onCancel: {
            lifecycle.withLock { $0.cancelWaiter(id) }?.resume(throwing: CancellationError())
        }
    }
}
