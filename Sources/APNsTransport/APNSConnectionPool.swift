public import APNs
public import HTTP2
public import HeraldCore
import HeraldIO
import Synchronization

/// The real ``APNSTransport``: HTTP/2 connections over TLS to one APNs host, shared by every
/// sender of one set of credentials.
///
/// ```swift
/// let pool = APNSConnectionPool(
///     endpoint: endpoints.push(.production),
///     tls: APNSTLSConfiguration(caFile: endpoints.caFile, credentials: credentials),
///     logger: logger
/// )
/// try await pool.warmUp()
/// let client = APNSClient(transport: pool, credentials: credentials, tokenProvider: tokens)
/// _ = try await client.send(request)
/// await pool.shutdown()
/// ```
///
/// - One pool per (credentials, endpoint): APNs binds a connection to the team and key (or
///   certificate) of its first request.
/// - Connections open lazily, each with a fresh DNS lookup. A request goes to the least loaded
///   connection with a free stream (the pool's requests on it below the server's
///   SETTINGS_MAX_CONCURRENT_STREAMS); when there is none, to a new connection if fewer than
///   ``Configuration/maxConnections`` are open and each has answered once (APNs allows one
///   stream until a connection's first success); otherwise it waits on the least loaded
///   connection, which queues it FIFO until a stream frees.
/// - A connection that received GOAWAY, closed, failed, or answered 503 (Apple asks for retries
///   on another connection) takes no more requests, is closed once its requests are done, and
///   is replaced on demand. Requests APNs did not process (above a GOAWAY's last-stream-id,
///   `REFUSED_STREAM`, never written) are sent again on another connection, up to three times;
///   then the ``HTTP2/HTTP2Error`` (an ``APNSRetryableError``) reaches the client.
/// - A request with a connection to go to is handed over from the sender's thread, without a
///   task; one that must wait for a connect or go to another connection continues in a task.
///   Connections retired on the way are closed by a task of the pool's, or by a call that can
///   await (a connect, the shutdown) if it comes first.
/// - Connects are single-flight. After a failed connect the pool waits an exponential backoff
///   with full jitter (``Configuration/reconnectBackoff``) before the next one, and meanwhile
///   fails sends at once with ``APNSConnectionPoolError`` instead of letting them hang.
/// - Idle connections stay open, kept alive by HTTP/2 PING (``Configuration/pingInterval``).
/// - Metrics: `herald_apns_connections{endpoint}`, `herald_apns_connects_total{result}`,
///   `herald_apns_requests_total{status}` (`status` is the HTTP status, or `error` when no
///   response came). Connects and disconnects are logged at notice with the GOAWAY reason;
///   never tokens.
public final class APNSConnectionPool: APNSTransport {
    /// The host this pool connects to.
    public let endpoint: APNSEndpoint
    /// The settings the pool was made with.
    public let configuration: Configuration

    private let http2: HTTP2ClientConnection.Configuration
    private let tls: Result<TLSContext, any Error>?
    let logger: Logger
    private let connects: Counter
    private let requests: Counter
    typealias PoolState = ConnectionPoolState<HTTP2ClientConnection>

    private let state: Mutex<PoolState>

    /// Makes a pool; nothing connects until the first request or ``warmUp()``.
    ///
    /// - Parameters:
    ///   - endpoint: the host and port (TLS unless ``APNSEndpoint/usesTLS`` is false, for a
    ///     cleartext simulator).
    ///   - tls: extra trusted roots and the client certificate for certificate credentials. A CA
    ///     file or certificate that cannot be loaded makes every connect fail with a clear error.
    ///   - logger: connects, disconnects and connect failures at notice and warning.
    ///   - metrics: where the pool's and its connections' metrics go.
    ///   - clock: times the reconnect backoff with its ``HeraldCore/HeraldClock/uptime()``, read
    ///     only while a backoff is on (tests pass a manual clock).
    ///   - random: the backoff jitter.
    public init(
        endpoint: APNSEndpoint,
        tls: APNSTLSConfiguration,
        configuration: Configuration = .init(),
        logger: Logger,
        metrics: MetricsRegistry = .shared,
        clock: any HeraldClock = SystemClock(),
        random: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
    ) {
        self.endpoint = endpoint
        self.configuration = configuration
        self.logger = logger
        var http2 = configuration.http2
        http2.connectTimeout = configuration.connectTimeout
        http2.requestTimeout = configuration.requestTimeout
        http2.pingInterval = configuration.pingInterval
        http2.coalescingWindow = configuration.coalescingWindow
        http2.logger = logger
        http2.metrics = metrics
        self.http2 = http2
        self.tls =
            endpoint.usesTLS
            ? Result { try TLSContext(configuration: tls.makeTLSConfiguration()) }
            : nil
        self.connects = metrics.counter(
            "herald_apns_connects_total",
            help: "Connection attempts to APNs by result (connected, failed)."
        )
        self.requests = metrics.counter(
            "herald_apns_requests_total",
            help: "Requests sent to APNs by response status (error: no response)."
        )
        let backoff = configuration.reconnectBackoff
        self.state = Mutex(
            PoolState(
                endpoint: endpoint,
                maxConnections: configuration.maxConnections,
                backoff: APNSRetryPolicy(initialBackoff: backoff.initial, maxBackoff: backoff.maximum),
                random: random,
                now: { clock.uptime() },
                connections: metrics.gauge("herald_apns_connections", help: "Open connections to APNs by endpoint.")
            )
        )
    }

    // MARK: Lifecycle

    /// Opens connections now until ``Configuration/minConnections`` (at most
    /// ``Configuration/maxConnections``) are usable, one after another.
    ///
    /// - Throws: ``APNSConnectionPoolError`` when a connect fails (or the pool is backing off).
    public func warmUp() async throws {
        try enter()
        defer { leave() }
        while true {
            try Task.checkCancellation()
            let (step, effects) = locked { state, effects in
                state.warmUpStep(target: configuration.minConnections, effects: &effects)
            }
            if !effects.isEmpty { await perform(effects) }
            switch step {
            case nil:
                return
            case .connect(let attempt):
                await connect(attempt)
                if case .failed(let error) = try await attempt.wait() { throw error }
            case .wait(let attempt):
                if case .failed(let error) = try await attempt.wait() { throw error }
            case .fail(let error):
                throw error
            case .use:
                preconditionFailure("a warm-up step never uses a connection")
            }
        }
    }

    /// Stops taking requests (new sends fail with ``APNSConnectionPoolError/Code/shutDown``), waits
    /// for the requests inside the pool to finish, then closes every connection (GOAWAY, TLS
    /// close_notify).
    public func shutdown() async {
        let mustWait = state.withLock { $0.beginShutdown() }
        if mustWait {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waiting = state.withLock { $0.addDrainWaiter(continuation) }
                if !waiting { continuation.resume() }
            }
        }
        let connections = state.withLock { $0.finishShutdown() }
        await withDiscardingTaskGroup { group in
            for connection in connections {
                group.addTask { await connection.close() }
            }
        }
        if !connections.isEmpty {
            logger.notice(
                "apns connections closed: shutdown",
                metadata: ["endpoint": .string(endpoint.description), "connections": .int(connections.count)]
            )
        }
    }

    /// Whether sending can work now: the pool is not shut down, and a usable connection exists, or
    /// no connect has failed since the last success, or the backoff after the last failure has
    /// passed. False exactly when a request would fail at once with
    /// ``APNSConnectionPoolError`` (for `/readyz`, and for a relay that answers 503 without
    /// waiting).
    public var isAvailable: Bool {
        state.withLock { $0.isAvailable() }
    }

    /// An executor that runs tasks on the thread driving this pool's connections (see
    /// ``HTTP2/EventLoopTaskExecutor``): tasks that do little but send pushes can prefer it
    /// (`withTaskExecutorPreference`) and skip the hand-over between the cooperative pool and
    /// the I/O thread for every push. Nothing that blocks or runs long may use it.
    public var taskExecutor: any TaskExecutor {
        EventLoopTaskExecutor(eventLoop: http2.eventLoop)
    }

    /// A snapshot of the pool, for readiness checks and tests.
    public var status: Status {
        state.withLock { $0.status() }
    }

    // MARK: Internals

    /// Requests not processed by APNs are sent again on another connection this many times.
    static let maximumResends = 3
    /// A send waits for this many successful connects at most (each new connection could fail
    /// before the request gets on it).
    static let maximumConnectsPerSend = 3

    /// Safe to send again, and not because the request's own time ran out.
    static func isResendable(_ error: HTTP2Error) -> Bool {
        error.isSafeToRetry && error.code != .requestTimeout
    }

    /// What a request gets once ``shutdown()`` has begun.
    var shutDownError: APNSConnectionPoolError {
        APNSConnectionPoolError(code: .shutDown, endpoint: endpoint, reason: "no new requests are taken")
    }

    private func enter() throws {
        guard state.withLock({ $0.enter() }) else {
            throw shutDownError
        }
    }

    func leave() {
        let waiters = state.withLock { $0.leave() }
        for waiter in waiters { waiter.resume() }
    }

    /// Runs `body` on the state; the effects it returns are for ``perform(_:)`` (not called on the
    /// hot path when there are none, so that a request costs no extra async frame).
    ///
    /// - Parameter mayAwait: false on paths that cannot await (a send, an answer on the loop
    ///   thread): connections those retire are closed by the next call that can, and when
    ///   `mayAwait` is true those closes come back in the effects.
    func locked<T>(
        mayAwait: Bool = true,
        _ body: (inout PoolState, inout PoolState.Effects) -> T
    ) -> (T, PoolState.Effects) {
        var effects = PoolState.Effects()
        let result = state.withLock { state in
            let result = body(&state, &effects)
            if mayAwait, state.hasDeferredCloses { effects.close += state.takeDeferredCloses() }
            return result
        }
        return (result, effects)
    }

    /// ``perform(_:)`` for paths that cannot await: records metrics and logs now, and leaves
    /// the closes to the next call that can await (or ``shutdown()``).
    func performWithoutWaiting(_ effects: PoolState.Effects) {
        record(effects)
        if !effects.close.isEmpty {
            state.withLock { $0.deferClose(effects.close) }
            // Every send takes a path that cannot await: a task closes them (retirements are
            // rare), unless a call that can await, or the shutdown, takes them first.
            Task { await self.closeDeferred() }
        }
    }

    /// Closes the retired connections left for a call that can await, if any are still left.
    private func closeDeferred() async {
        let closes = state.withLock { $0.takeDeferredCloses() }
        for connection in closes {
            await connection.close()
        }
    }

    /// Records metrics, logs events and closes retired connections (which carry none of the
    /// pool's requests any more, so `close()` returns as soon as the socket is closed).
    ///
    /// Never inlined, like ``connect(_:)``: its async frame is then allocated only when there are
    /// effects, not kept by every request waiting for its response.
    @inline(never)
    func perform(_ effects: PoolState.Effects) async {
        record(effects)
        for connection in effects.close {
            await connection.close()
        }
    }

    /// The metrics and log lines of `effects`.
    private func record(_ effects: PoolState.Effects) {
        for (status, count) in effects.statusCounts {
            requests.increment(by: Double(count), labels: [("status", status < 0 ? "error" : String(status))])
        }
        for event in effects.events {
            switch event {
            case .connected(let id, let open):
                logger.notice(
                    "apns connection opened",
                    metadata: ["endpoint": .string(endpoint.description), "connection": .int(id), "open": .int(open)]
                )
            case .connectFailed(let error, let failures):
                logger.warning(
                    "apns connect failed",
                    metadata: [
                        "endpoint": .string(endpoint.description), "error": .string(error.description),
                        "consecutive_failures": .int(failures),
                    ]
                )
            case .retired(let id, let reason, let served):
                logger.notice(
                    "apns connection closing",
                    metadata: [
                        "endpoint": .string(endpoint.description), "connection": .int(id),
                        "reason": .string(reason), "responses": .int(served),
                    ]
                )
            }
        }
    }

    /// Runs a connect this send started and records the result for everyone waiting on it.
    @inline(never)
    func connect(_ attempt: ConnectAttempt) async {
        let result: Result<HTTP2ClientConnection, any Error>
        do {
            let context = try tls?.get()
            result = .success(
                try await HTTP2ClientConnection.connect(
                    host: endpoint.host,
                    port: endpoint.port,
                    tls: context,
                    configuration: http2
                )
            )
            connects.increment(labels: [("result", "connected")])
        } catch let error as CancellationError {
            result = .failure(error)
        } catch let error as HTTP2Error {
            connects.increment(labels: [("result", "failed")])
            result = .failure(error)
        } catch {
            connects.increment(labels: [("result", "failed")])
            result = .failure(
                HTTP2Error(
                    code: .connectFailed,
                    isSafeToRetry: true,
                    message: "the TLS settings for \(endpoint.authority) cannot be used: \(error)",
                    underlying: error
                )
            )
        }
        let (outcome, effects) = locked { state, effects in
            state.connectFinished(attempt, result: result, effects: &effects)
        }
        if !effects.isEmpty { await perform(effects) }
        attempt.complete(outcome)
    }
}

extension APNSConnectionPool {
    /// Settings of an ``APNSConnectionPool``.
    public struct Configuration: Sendable {
        /// The most connections open at once. More than one opens only when every open
        /// connection's streams are all in use. Default 1.
        public var maxConnections = 1
        /// How many connections ``APNSConnectionPool/warmUp()`` opens. Default 1.
        public var minConnections = 1
        /// DNS, TCP, TLS and the server's first SETTINGS together. Default 10 s.
        public var connectTimeout: Duration = .seconds(10)
        /// Per request, from when it reaches a connection (waiting for a stream included).
        /// Default 30 s.
        public var requestTimeout: Duration = .seconds(30)
        /// A PING goes out after this long without hearing from APNs; `nil` never pings.
        /// Default 60 s.
        public var pingInterval: Duration? = .seconds(60)
        /// The wait after the first failed connect is drawn from zero to `initial`, doubling with
        /// each further failure up to `maximum` (full jitter). Default 100 ms, 30 s.
        public var reconnectBackoff: (initial: Duration, maximum: Duration) = (.milliseconds(100), .seconds(30))
        /// Under sustained load, requests sent within this long of the previous batch leave
        /// together when the window ends, in one write per connection: fewer system calls and
        /// wake-ups here and at APNs, for about one window of added latency (up to a millisecond
        /// more). The first request after a quiet window leaves at once. `nil` (the default)
        /// sends each batch as soon as it can
        /// (``HTTP2ClientConnection/Configuration/coalescingWindow``).
        public var coalescingWindow: Duration?
        /// The rest of the HTTP/2 client settings (stream and window sizes, event loop, ping
        /// timeout). Its connect timeout, request timeout, ping interval, coalescing window,
        /// logger and metrics are replaced by the pool's.
        public var http2 = HTTP2ClientConnection.Configuration()

        public init() {}
    }

    /// A snapshot of the pool.
    public struct Status: Sendable, Hashable {
        /// Connections open (including ones closing after GOAWAY or 503).
        public var openConnections = 0
        /// Connections that take new requests.
        public var usableConnections = 0
        /// The pool's requests on connections now.
        public var requestsInFlight = 0
        /// Failed connects (including connections closed before their first response) since a
        /// connection last answered.
        public var consecutiveConnectFailures = 0
        /// While backing off: how long until the next connect may start.
        public var nextConnectAttemptIn: Duration?
        /// The last connect error, until a connection answers again.
        public var lastConnectError: String?
        /// True once ``APNSConnectionPool/shutdown()`` was called.
        public var isShutDown = false

        public init() {}
    }
}
