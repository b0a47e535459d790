import CNGHTTP2
import HeraldCore
import HeraldIO
import Synchronization

/// The loop side of an ``HTTP2ClientConnection``: the thin shell that owns the nghttp2 client
/// session, the channel and the timers, feeds their events to a ``ClientSessionState`` and runs
/// the actions it returns. The rules (stream limit, GOAWAY, timeouts, cancellation, closing)
/// live in the state; the coalescing rules in ``ClientSessionInbox``.
///
/// Requests arrive through ``submit(_:mayWaitForWindow:)`` from any thread into the inbox; the
/// first submission of a batch schedules one drain on the loop, which opens as many streams as
/// the state allows, serializes them with `nghttp2_session_mem_send` into the channel's buffer
/// and writes them with one flush.
///
/// `@unchecked Sendable`: `inbox` is a `Mutex` and `usableLimit` an atomic; `configuration`,
/// `eventLoop`, the defaults and `drainTask` are immutable; every other property is read and
/// written only on `eventLoop`'s thread (entry points are the channel callbacks, tasks sent with
/// `execute`, and timers). Members without `private` are used by the extensions in
/// `ClientSession+Channel.swift` and `ClientSession+NGHTTP2.swift`; they are loop-thread state
/// like the rest, except `inbox` and `usableLimit`.
final class ClientSession: ChannelHandler, @unchecked Sendable {
    typealias State = ClientSessionState<ClientStream>

    let configuration: HTTP2ClientConnection.Configuration
    let eventLoop: EventLoop
    let defaultAuthority: String
    let defaultScheme: String
    let logger: Logger
    let metrics: HTTP2ClientMetrics
    let inbox = Mutex(ClientSessionInbox<ClientStream>())
    /// The published status's stream limit while the connection is usable, else -1: what a pool
    /// checks per request, without taking the inbox's lock and copying the whole status.
    let usableLimit = Atomic<Int>(-1)
    private var drainTask: (@Sendable () -> Void)?
    /// ``HTTP2ClientConnection/Configuration/coalescingWindow`` in nanoseconds; 0 when off.
    private let coalescingWindow: UInt64

    // Loop-thread state.
    var state: State
    var channel: Channel?
    var channelClosed = false
    var nghttp2: NGHTTP2Session?
    private var actionBuffer: [State.Action] = []
    var deadlineTimer: TimerHandle?
    var deadlineTimerAt: UInt64 = .max
    private var windowTimer: TimerHandle?
    private var pendingSubmissions: [ClientStream] = []
    private var pendingCancellations: [ClientStream] = []
    var settingsWaiter: UnsafeContinuation<Void, any Error>?
    var closeWaiters: [UnsafeContinuation<Void, Never>] = []
    var lastReadTime: UInt64 = 0
    var pingTimer: TimerHandle?
    var pingTimeoutTimer: TimerHandle?
    var published = HTTP2ClientConnection.Status()
    /// While nghttp2 processes received bytes, finished streams are resumed in one burst at the
    /// end of the read batch (after new output is written), not one by one in callbacks.
    var deferringResumes = false
    private var pendingResumes: [(stream: ClientStream, waiter: ClientStream.Waiter, error: (any Error)?)] = []

    init(
        configuration: HTTP2ClientConnection.Configuration,
        defaultAuthority: String,
        defaultScheme: String
    ) throws {
        self.configuration = configuration
        self.eventLoop = configuration.eventLoop
        self.defaultAuthority = defaultAuthority
        self.defaultScheme = defaultScheme
        self.logger = configuration.logger
        self.coalescingWindow = configuration.coalescingWindow?.nanoseconds ?? 0
        self.metrics = HTTP2ClientMetrics(registry: configuration.metrics)
        self.state = State(
            defaultTimeout: configuration.requestTimeout?.nanoseconds,
            maximumConcurrentStreams: configuration.maximumConcurrentStreams
        )
        // nghttp2 calls back only during calls this session makes, so the unretained pointer
        // (`withClientSession` in ClientSession+NGHTTP2.swift) always points at a live session.
        self.nghttp2 = try NGHTTP2Session.make(
            server: false,
            userData: Unmanaged.passUnretained(self).toOpaque(),
            configureCallbacks: { callbacks in
                nghttp2_session_callbacks_set_on_header_callback(callbacks, clientOnHeader)
                nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, clientOnDataChunk)
                nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, clientOnFrameReceived)
                nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, clientOnFrameSent)
                nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks, clientOnFrameNotSent)
                nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, clientOnStreamClose)
            },
            configureOptions: { option in
                // Never open more than one stream before the server's SETTINGS say how many.
                nghttp2_option_set_peer_max_concurrent_streams(option, 1)
                // A header block in more frames than this is a CONTINUATION flood: fatal.
                nghttp2_option_set_max_continuations(option, State.maximumContinuations)
            }
        )
        drainTask = { [unowned self] in self.drainInbox(.queuedTask) }
    }

    // MARK: any thread

    var status: HTTP2ClientConnection.Status {
        inbox.withLock { $0.status }
    }

    /// ``HTTP2ClientConnection/Status/maxConcurrentStreams`` while the status says the connection
    /// is usable; nil otherwise.
    var usableStreamLimit: Int? {
        let limit = usableLimit.load(ordering: .acquiring)
        return limit < 0 ? nil : limit
    }

    /// Queues `stream` (whose waiter is set) for the loop, or fails it at once when the
    /// connection no longer takes requests. With `mayWaitForWindow`, an armed coalescing window
    /// holds it until the window ends.
    func submit(_ stream: ClientStream, mayWaitForWindow: Bool) {
        stream.submittedAt = EventLoop.monotonicNanoseconds()
        switch inbox.withLock({ $0.submit(stream, mayWaitForWindow: mayWaitForWindow) }) {
        case .rejected(let rejection):
            stream.waiter?.resume(stream, throwing: rejection)
            stream.waiter = nil
        case .queued:
            break
        case .queuedDrainNeeded:
            if let drainTask { eventLoop.execute(drainTask) }
        }
    }

    /// Asks the loop to cancel `stream` (reset it if open). Does not wait for the coalescing
    /// window.
    func cancel(_ stream: ClientStream) {
        if inbox.withLock({ $0.cancel(stream) }), let drainTask { eventLoop.execute(drainTask) }
    }

    /// Resolves once the peer's first SETTINGS frame arrived, or throws if the connection failed
    /// first or `deadline` passed.
    func waitForRemoteSettings(deadline: UInt64) async throws {
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                eventLoop.execute { [self] in
                    if let failure = state.failure {
                        continuation.resume(throwing: failure)
                    } else if state.settingsReceived {
                        continuation.resume()
                    } else {
                        settingsWaiter = continuation
                        eventLoop.scheduleTimer(at: deadline) { [self] in
                            guard settingsWaiter != nil else { return }
                            failConnection(
                                HTTP2Error(
                                    code: .connectFailed,
                                    isSafeToRetry: true,
                                    message: "the server sent no HTTP/2 SETTINGS in time"
                                )
                            )
                        }
                    }
                }
            }
        } onCancel: {
            eventLoop.execute { [self] in
                failConnection(HTTP2Error(code: .connectFailed, isSafeToRetry: true, message: "connect was cancelled"))
            }
        }
    }

    /// Stops taking requests, lets queued and open ones finish, then sends GOAWAY and closes.
    func close() async {
        inbox.withLock {
            $0.reject(
                HTTP2Error(
                    code: .connectionClosed,
                    isSafeToRetry: true,
                    message: "the HTTP/2 connection is closing and takes no new requests"
                )
            )
        }
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            eventLoop.execute { [self] in
                if channelClosed || (state.phase == .closed && channel == nil) {
                    continuation.resume()
                    return
                }
                closeWaiters.append(continuation)
                state.requestClose()
                drainInbox(.closing)
            }
        }
    }

    /// The facade was released without `close()`: close now.
    func abandon() {
        eventLoop.execute { [self] in
            failConnection(
                HTTP2Error(code: .connectionClosed, isSafeToRetry: false, message: "the HTTP/2 connection was released")
            )
        }
    }

    // MARK: loop: running the state's actions

    /// Calls `body` with an action list to feed state events into, then runs the actions.
    /// Reentrant: an action may feed more events (nghttp2 calls back while output is pulled).
    func withActions(_ body: (inout [State.Action]) -> Void) {
        var actions: [State.Action] = []
        swap(&actions, &actionBuffer)
        body(&actions)
        if !actions.isEmpty { run(actions) }
        actions.removeAll(keepingCapacity: actions.count <= 4096)
        swap(&actions, &actionBuffer)
    }

    private func run(_ actions: [State.Action]) {
        var closed = false
        for action in actions {
            switch action {
            case .succeed(let stream):
                resume(stream, throwing: nil)
            case .fail(let stream, .cancelled):
                resume(stream, throwing: CancellationError())
            case .fail(let stream, .error(let error)):
                metrics.requestFailures.increment(labels: [
                    ("cause", error.code.description), ("safe_to_retry", error.isSafeToRetry ? "true" : "false"),
                ])
                resume(stream, throwing: error)
            case .resetStream(let streamID):
                guard let nghttp2, state.phase != .closed else { continue }
                nghttp2_submit_rst_stream(
                    nghttp2.pointer,
                    UInt8(NGHTTP2_FLAG_NONE.rawValue),
                    streamID,
                    HTTP2ErrorCode.cancel.rawValue
                )
            case .rejectNewRequests(let error):
                inbox.withLock { $0.reject(error) }
                drainSoon()
            case .closeConnection(let closing):
                closeConnection(closing)
                closed = true
            }
        }
        if closed {
            publishStatus()
            resumeDeferred()
        }
    }

    /// Resumes the stream's waiter (once); while a read batch is processed, at its end.
    private func resume(_ stream: ClientStream, throwing error: (any Error)?) {
        guard let waiter = stream.waiter else { return }
        stream.waiter = nil
        if deferringResumes {
            pendingResumes.append((stream, waiter, error))
        } else {
            waiter.resume(stream, throwing: error)
        }
    }

    func resumeDeferred() {
        deferringResumes = false
        guard !pendingResumes.isEmpty else { return }
        for (stream, waiter, error) in pendingResumes {
            waiter.resume(stream, throwing: error)
        }
        pendingResumes.removeAll(keepingCapacity: pendingResumes.count <= 4096)
    }

    private func closeConnection(_ closing: State.Closing) {
        if closing.isFailure {
            metrics.connectionFailures.increment(labels: [("cause", closing.error.code.description)])
        }
        inbox.withLock { $0.reject(closing.error.with(safeToRetry: true), replacingUnlessClosed: true) }
        drainSoon()
        publishStatus()  // before any continuation resumes
        for timer in [deadlineTimer, pingTimer, pingTimeoutTimer].compactMap({ $0 }) {
            eventLoop.cancelTimer(timer)
        }
        deadlineTimer = nil
        pingTimer = nil
        pingTimeoutTimer = nil
        if let settingsWaiter {
            self.settingsWaiter = nil
            settingsWaiter.resume(throwing: closing.error)
        }
        if let channel {
            channel.close(mode: closing.graceful ? .graceful : .abort)
        } else {
            channelClosed = true
            resumeCloseWaiters()
        }
        // This may run inside an nghttp2 callback: the session goes on a later iteration, and
        // the streams it points at stay alive until then.
        let retired = closing.retired
        eventLoop.execute { [self] in
            nghttp2 = nil
            withExtendedLifetime(retired) {}
        }
    }

    /// Fails every request, closes the channel and forgets the nghttp2 session.
    func failConnection(_ error: HTTP2Error, graceful: Bool = false) {
        withActions { state.fail(error, graceful: graceful, actions: &$0) }
    }

    // MARK: loop: requests

    /// Opens what was submitted and cancels what was cancelled.
    private func drainInbox(_ cause: ClientSessionInbox<ClientStream>.DrainCause) {
        if cause == .windowTimer { windowTimer = nil }
        let coalescing = coalescingWindow > 0
        let isClosed = state.phase == .closed
        let armTimer = inbox.withLock {
            $0.drain(
                cause,
                submissions: &pendingSubmissions,
                cancellations: &pendingCancellations,
                coalescing: coalescing,
                isClosed: isClosed
            )
        }
        if armTimer {
            // Holds the session until the timer runs (one window at most) or is cancelled by
            // `drainSoon()`, so that requests submitted meanwhile are always drained.
            let now = EventLoop.monotonicNanoseconds()
            let deadline = now &+ coalescingWindow < now ? UInt64.max : now &+ coalescingWindow
            windowTimer = eventLoop.scheduleTimer(at: deadline) { [self] in drainInbox(.windowTimer) }
        }
        withActions { actions in
            for stream in pendingSubmissions {
                stream.requestID = state.submit(
                    stream,
                    at: stream.submittedAt,
                    timeoutOverride: stream.timeoutOverride,
                    cancelled: stream.cancelRequested,
                    actions: &actions
                )
            }
            for stream in pendingCancellations {
                if let id = stream.requestID {
                    state.cancel(id, actions: &actions)
                } else {
                    stream.cancelRequested = true
                }
            }
        }
        pendingSubmissions.removeAll(keepingCapacity: pendingSubmissions.count <= 4096)
        pendingCancellations.removeAll(keepingCapacity: true)
        afterEvents()
    }

    /// Requests waiting for the coalescing window are drained on the next iteration, not when
    /// the window's timer would fire: after GOAWAY or a failure they fail (safe to retry) at once.
    private func drainSoon() {
        let queue = inbox.withLock { $0.drainSoon() }
        if let windowTimer {
            eventLoop.cancelTimer(windowTimer)
            self.windowTimer = nil
        }
        if queue, let drainTask { eventLoop.execute(drainTask) }
    }

    /// Opens streams for waiting requests while the state allows.
    private func startStreams() {
        guard state.phase == .ready, let nghttp2 else { return }
        while let (id, stream) = state.nextRequestToOpen() {
            open(stream, id: id, in: nghttp2)
        }
    }

    private func open(_ stream: ClientStream, id: ClientRequestID, in nghttp2: NGHTTP2Session) {
        // nghttp2 keeps this unretained pointer as the stream's user data (and the body's data
        // source); the state holds the stream until nghttp2 closes it, or until the session is
        // gone after a failure (`Closing.retired`).
        let streamPointer = Unmanaged.passUnretained(stream).toOpaque()
        let streamID: Int32
        if stream.body.isEmpty {
            streamID = nghttp2_submit_request(
                nghttp2.pointer,
                nil,
                stream.requestFieldArray,
                stream.fieldCount,
                nil,
                streamPointer
            )
        } else {
            var provider = nghttp2_data_provider(
                source: nghttp2_data_source(ptr: streamPointer),
                read_callback: clientReadRequestBody
            )
            streamID = nghttp2_submit_request(
                nghttp2.pointer,
                nil,
                stream.requestFieldArray,
                stream.fieldCount,
                &provider,
                streamPointer
            )
        }
        // nghttp2 reads the fields in place until the HEADERS frame is sent (`onFrameSent`).
        guard streamID > 0 else {
            withActions {
                state.openFailed(
                    id,
                    idsExhausted: streamID == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE.rawValue,
                    reason: String(cString: nghttp2_strerror(streamID)),
                    actions: &$0
                )
            }
            return
        }
        state.streamOpened(id, streamID: streamID)
    }

    // MARK: loop: output

    /// Moves nghttp2's pending frames into the channel and writes them.
    func flushSession() {
        guard let channel, let nghttp2, state.phase != .closed else { return }
        while State.mayPullOutput(pendingWriteBytes: channel.pendingWriteBytes) {
            switch nghttp2.nextOutput() {
            case .bytes(let bytes):
                do {
                    try channel.write(bytes)
                } catch {
                    return  // closed under us: channelInactive ends the session
                }
            case .none:
                channel.flush()
                return
            case .failed(let reason):
                failConnection(HTTP2Error(code: .protocolError, isSafeToRetry: false, message: "nghttp2: \(reason)"))
                return
            }
        }
        channel.flush()
    }

    /// Runs after every batch of events: open streams, write, close if done, re-arm timers,
    /// publish the status.
    func afterEvents() {
        startStreams()
        flushSession()
        closeIfDone()
        armDeadlineTimer()
        publishStatus()
    }

    private func closeIfDone() {
        guard state.shouldClose(inboxIsEmpty: true), inbox.withLock({ !$0.hasSubmissions }) else { return }
        if let nghttp2, state.goAway == nil {
            nghttp2_session_terminate_session(nghttp2.pointer, HTTP2ErrorCode.noError.rawValue)
            flushSession()
        }
        failConnection(
            HTTP2Error(code: .connectionClosed, isSafeToRetry: true, message: "the HTTP/2 connection was closed"),
            graceful: true
        )
    }
}
