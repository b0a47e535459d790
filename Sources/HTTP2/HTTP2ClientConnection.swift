public import HeraldCore
public import HeraldIO

/// An HTTP/2 client connection (nghttp2 over a ``HeraldIO`` channel, TLS or cleartext
/// prior-knowledge) that many tasks share.
///
/// ```swift
/// let context = try TLSContext(configuration: .makeClient())
/// let connection = try await HTTP2ClientConnection.connect(host: "api.push.apple.com", port: 443, tls: context)
/// let response = try await connection.send(HTTP2Request(path: "/3/device/\(token)", body: payload))
/// await connection.close()
/// ```
///
/// - Streams: requests beyond the peer's current SETTINGS_MAX_CONCURRENT_STREAMS wait in FIFO
///   order and are opened as streams finish or the limit rises; none is opened optimistically.
/// - GOAWAY: streams above the last-stream-id and requests still waiting fail with
///   ``HTTP2Error/isSafeToRetry``; the others finish; then the connection closes. ``status``
///   tells a pool when to replace the connection.
/// - Liveness: with ``Configuration/pingInterval`` a PING goes out after that long without
///   hearing from the server; no answer within ``Configuration/pingTimeout`` fails the connection.
public final class HTTP2ClientConnection: Sendable {
    private let session: ClientSession

    /// The loop that runs this connection.
    public var eventLoop: EventLoop { session.eventLoop }

    /// What a pool needs to know about the connection now (a snapshot; cheap to read).
    public var status: Status { session.status }

    /// ``Status/maxConcurrentStreams`` when ``Status/isUsable``, else nil: the two fields a pool
    /// reads for every request, from an atomic rather than the status lock.
    package var usableStreamLimit: Int? { session.usableStreamLimit }

    private init(session: ClientSession) {
        self.session = session
    }

    deinit {
        session.abandon()
    }

    /// Connects: a fresh DNS lookup, TCP (TCP_NODELAY), TLS with ALPN `h2` when `tls` is given
    /// (cleartext prior-knowledge HTTP/2 otherwise), then waits for the server's SETTINGS.
    ///
    /// - Parameters:
    ///   - tls: a client ``TLSContext`` (share one between connections), or nil for cleartext.
    /// - Throws: ``HTTP2Error`` with code ``HTTP2Error/Code/connectFailed`` and the cause in
    ///   ``HTTP2Error/underlying`` (`TLSError`, `IOError`, `ChannelError`); `CancellationError`.
    public static func connect(
        host: String,
        port: Int,
        tls: TLSContext?,
        configuration: Configuration = Configuration()
    ) async throws -> HTTP2ClientConnection {
        let defaultPort = tls == nil ? 80 : 443
        let hostPart = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        let authority = port == defaultPort ? hostPart : "\(hostPart):\(port)"
        let session = try ClientSession(
            configuration: configuration,
            defaultAuthority: authority,
            defaultScheme: tls == nil ? "http" : "https"
        )
        let connection = HTTP2ClientConnection(session: session)
        let deadline = EventLoop.monotonicNanoseconds() &+ configuration.connectTimeout.nanoseconds
        do {
            _ = try await Channel.connect(
                host: host,
                port: port,
                tls: tls,
                timeout: configuration.connectTimeout,
                eventLoop: configuration.eventLoop,
                handler: session
            )
            try await session.waitForRemoteSettings(deadline: deadline)
        } catch let error as CancellationError {
            session.metrics.connects.increment(labels: [("result", "cancelled")])
            throw error
        } catch let error as HTTP2Error {
            session.metrics.connects.increment(labels: [("result", "failed")])
            throw error.code == .connectFailed
                ? error
                : HTTP2Error(
                    code: .connectFailed,
                    isSafeToRetry: true,
                    message: "cannot connect to \(authority): \(error.message)",
                    underlying: error
                )
        } catch {
            session.metrics.connects.increment(labels: [("result", "failed")])
            throw HTTP2Error(
                code: .connectFailed,
                isSafeToRetry: true,
                message: "cannot connect to \(authority): \(error)",
                underlying: error
            )
        }
        session.metrics.connects.increment(labels: [("result", "connected")])
        return connection
    }

    /// Connects with a new ``TLSContext`` made from `tls` (convenient for one-off connections;
    /// pools should build the context once).
    public static func connect(
        host: String,
        port: Int,
        tls: TLSConfiguration,
        configuration: Configuration = Configuration()
    ) async throws -> HTTP2ClientConnection {
        let context: TLSContext
        do {
            context = try TLSContext(configuration: tls)
        } catch {
            throw HTTP2Error(
                code: .connectFailed,
                isSafeToRetry: false,
                message: "cannot connect to \(host):\(port): \(error)",
                underlying: error
            )
        }
        return try await connect(host: host, port: port, tls: context, configuration: configuration)
    }

    /// Sends `request` and waits for the whole response.
    ///
    /// Waits for a free stream first when the peer's limit is reached. Cancelling the task resets
    /// the stream (RST_STREAM CANCEL) or drops the queued request, and throws `CancellationError`.
    ///
    /// - Throws: ``HTTP2Error`` (check ``HTTP2Error/isSafeToRetry``), `CancellationError`.
    public func send(_ request: HTTP2Request) async throws -> HTTP2Response {
        try Task.checkCancellation()
        let stream = ClientStream(
            request: request,
            timeoutOverride: request.timeout?.nanoseconds,
            authority: session.defaultAuthority,
            scheme: session.defaultScheme
        )
        try await exchange(stream)
        return stream.makeResponse()
    }

    /// Sends a request whose header fields `writeFields` writes straight into the block nghttp2
    /// reads (no ``HTTP2Request`` or ``HTTP2Headers`` in between), and waits for the response.
    ///
    /// The connection writes `:method`, `:scheme` and `:authority`; `writeFields` writes `:path`
    /// first, then the regular fields with lowercase names — at most `fieldCount` fields with
    /// `byteCount` name and value bytes in all. It runs once, before this suspends.
    ///
    /// - Throws: as ``send(_:)``.
    package func send(
        method: String,
        fieldCount: Int,
        byteCount: Int,
        body: [UInt8],
        timeout: Duration? = nil,
        writeFields: (inout HTTP2HeaderBlockWriter) -> Void
    ) async throws -> HTTP2ClientResponse {
        try Task.checkCancellation()
        let stream = makeStream(method, fieldCount, byteCount, body, timeout, writeFields)
        try await exchange(stream)
        return HTTP2ClientResponse(stream: stream)
    }

    /// A stream for this connection's authority and scheme.
    private func makeStream(
        _ method: String,
        _ fieldCount: Int,
        _ byteCount: Int,
        _ body: [UInt8],
        _ timeout: Duration?,
        _ writeFields: (inout HTTP2HeaderBlockWriter) -> Void
    ) -> ClientStream {
        ClientStream(
            method: method,
            authority: session.defaultAuthority,
            scheme: session.defaultScheme,
            fieldCount: fieldCount,
            byteCount: byteCount,
            body: body,
            timeoutOverride: timeout?.nanoseconds,
            writeFields: writeFields
        )
    }

    /// Sends a request like ``send(method:fieldCount:byteCount:body:timeout:writeFields:)``, but
    /// without a task: `completion` gets the response or the error, once, on the loop thread
    /// (or at once on the caller's thread when the connection no longer takes requests). It must
    /// not block: it runs between the loop's reads and writes.
    ///
    /// For senders that hand off many small requests from threads that are not Swift tasks (the
    /// relay answers on the HTTP server's threads): no task, continuation or executor hop per
    /// request. These requests may wait for ``Configuration/coalescingWindow``.
    package func submit(
        method: String,
        fieldCount: Int,
        byteCount: Int,
        body: [UInt8],
        writeFields: (inout HTTP2HeaderBlockWriter) -> Void,
        completion: @escaping @Sendable (Result<HTTP2ClientResponse, any Error>) -> Void
    ) {
        submit(
            method: method,
            fieldCount: fieldCount,
            byteCount: byteCount,
            body: body,
            writeFields: writeFields,
            handler: CompletionHandler(completion)
        )
    }

    /// ``submit(method:fieldCount:byteCount:body:writeFields:completion:)`` with an object in place
    /// of the completion closure, for senders that keep per-request state in an object anyway:
    /// one allocation per request fewer.
    package func submit(
        method: String,
        fieldCount: Int,
        byteCount: Int,
        body: [UInt8],
        writeFields: (inout HTTP2HeaderBlockWriter) -> Void,
        handler: any HTTP2ResponseHandler
    ) {
        let stream = makeStream(method, fieldCount, byteCount, body, nil, writeFields)
        stream.waiter = .handler(handler)
        session.submit(stream, mayWaitForWindow: true)
    }

    /// A completion closure as a ``HTTP2ResponseHandler``.
    private final class CompletionHandler: HTTP2ResponseHandler {
        let completion: @Sendable (Result<HTTP2ClientResponse, any Error>) -> Void

        init(_ completion: @escaping @Sendable (Result<HTTP2ClientResponse, any Error>) -> Void) {
            self.completion = completion
        }

        func responseArrived(_ result: Result<HTTP2ClientResponse, any Error>) {
            completion(result)
        }
    }

    @inline(__always)
    private func exchange(_ stream: ClientStream) async throws {
        let session = self.session
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                stream.waiter = .task(continuation)
                session.submit(stream, mayWaitForWindow: false)
            }
        } onCancel: {
            session.cancel(stream)
        }
    }

    /// Stops taking requests (new ones fail with ``HTTP2Error/Code/connectionClosed``, safe to
    /// retry), lets queued and open requests finish, sends GOAWAY and closes. Returns once the
    /// socket is closed.
    public func close() async {
        await session.close()
    }
}

extension HTTP2ClientConnection {
    /// Settings of a client connection.
    public struct Configuration: Sendable {
        /// DNS, TCP, TLS and the server's first SETTINGS together. Default 10 s.
        public var connectTimeout: Duration = .seconds(10)
        /// Default per-request timeout, counted from `send` (queueing included); nil for none.
        /// Default 30 s.
        public var requestTimeout: Duration? = .seconds(30)
        /// Send a PING after this long without receiving anything; nil never pings. Default 60 s.
        public var pingInterval: Duration? = .seconds(60)
        /// How long a PING may go unanswered before the connection is failed. Default 10 s.
        public var pingTimeout: Duration = .seconds(10)
        /// The most streams opened at once even when the peer allows more. Default 1000.
        public var maximumConcurrentStreams = 1000
        /// SETTINGS_INITIAL_WINDOW_SIZE for response bodies. Default 1 MiB.
        public var initialStreamWindowSize = 1 << 20
        /// The connection-level receive window. Default 16 MiB.
        public var connectionWindowSize = 16 << 20
        /// A larger response body resets the stream and fails the request. Default 16 MiB.
        public var maximumResponseBodySize = 16 << 20
        /// Under sustained load, requests handed over with the completion-handler `submit` within
        /// this long of the previous batch wait for the window to end and leave together in one
        /// write, instead of each batch waking the event loop as it comes: fewer system calls and
        /// wake-ups on both ends, for added latency of about one window (the loop's timers count
        /// whole milliseconds, so up to a millisecond more). A request after a quiet window leaves
        /// at once. Awaited `send` calls never wait for the window (a caller that awaits each
        /// response before sending the next would be slowed down by it); when one comes, the
        /// waiting requests leave with it. `nil` (the default) writes every batch as soon as the
        /// loop sees it.
        public var coalescingWindow: Duration?
        /// The loop that runs the connection. Default ``EventLoop/shared``.
        public var eventLoop: EventLoop = .shared
        /// Where GOAWAY and ping failures are logged.
        public var logger = Logger(label: "herald.http2.client")
        /// Where connection events and request failures are counted. Default
        /// `MetricsRegistry.shared`.
        public var metrics: MetricsRegistry = .shared

        public init() {}
    }

    /// A snapshot of a connection's state for pools.
    public struct Status: Sendable, Equatable {
        /// True when new requests will be sent on this connection (connected, no GOAWAY, not
        /// closing or failed).
        public var isUsable = false
        /// The peer's current SETTINGS_MAX_CONCURRENT_STREAMS (capped by
        /// ``Configuration/maximumConcurrentStreams``); 0 once closed.
        public var maxConcurrentStreams = 0
        /// Streams open now.
        public var activeStreams = 0
        /// Requests waiting for a free stream.
        public var queuedRequests = 0
        /// The GOAWAY received, if any (with the peer's reason in its debug data).
        public var goAway: HTTP2GoAway?
        /// True once the connection is closed or failed.
        public var isClosed = false
        /// Why the connection closed, once it has.
        public var failure: HTTP2Error?

        public init() {}

        public static func == (lhs: Status, rhs: Status) -> Bool {
            lhs.isUsable == rhs.isUsable && lhs.maxConcurrentStreams == rhs.maxConcurrentStreams
                && lhs.activeStreams == rhs.activeStreams && lhs.queuedRequests == rhs.queuedRequests
                && lhs.goAway == rhs.goAway && lhs.isClosed == rhs.isClosed
                && lhs.failure?.message == rhs.failure?.message
        }
    }
}

/// Hears how a request submitted with
/// ``HTTP2ClientConnection/submit(method:fieldCount:byteCount:body:writeFields:handler:)`` ended,
/// once, on the connection's loop thread (or at once on the submitting thread when the connection
/// no longer takes requests). It must not block.
package protocol HTTP2ResponseHandler: AnyObject, Sendable {
    func responseArrived(_ result: Result<HTTP2ClientResponse, any Error>)
}
