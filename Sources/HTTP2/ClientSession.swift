import CNGHTTP2
import HeraldCore
import HeraldIO
import Synchronization

/// The loop side of an ``HTTP2ClientConnection``: the nghttp2 client session, the stream queue
/// and the timers, all driven on one event loop thread.
///
/// Requests arrive through ``submit(_:)`` from any thread into a `Mutex`-protected inbox; the
/// first submission of a batch schedules one drain on the loop, which opens as many streams as the
/// peer's SETTINGS_MAX_CONCURRENT_STREAMS allows, serializes them with `nghttp2_session_mem_send`
/// into the channel's buffer and writes them with one flush.
///
/// With a coalescing window (``HTTP2ClientConnection/Configuration/coalescingWindow``), a drain
/// that found requests which may wait arms a timer for the next one, and such requests submitted
/// meanwhile wait for it instead of waking the loop: under sustained load they leave once per
/// window, in one write, and the loop wakes once per window instead of once per handful of
/// requests. The first request after a quiet window, awaited requests, cancellations, GOAWAY,
/// failure and close all drain at once.
///
/// `@unchecked Sendable`: `shared` is a `Mutex`; `configuration`, `eventLoop`, the defaults and
/// `drainTask` are immutable; every other property is read and written only on `eventLoop`'s
/// thread (entry points are the channel callbacks, tasks sent with `execute`, and timers).
///
/// Members without `private` are used by the nghttp2 callbacks in `ClientSession+NGHTTP2.swift`;
/// they are loop-thread state like the rest.
final class ClientSession: ChannelHandler, @unchecked Sendable {
    enum Phase {
        /// Waiting for the channel and the peer's first SETTINGS.
        case connecting
        /// Opening streams.
        case ready
        /// GOAWAY received: no new streams; open ones finish, then the connection closes.
        case goingAway
        /// Closed or failed.
        case closed
    }

    private struct Shared {
        var submissions: [ClientStream] = []
        var cancellations: [ClientStream] = []
        /// A drain task is queued on the loop.
        var drainQueued = false
        /// The coalescing window's timer will drain the inbox when it fires: submissions that
        /// may wait do, instead of queueing a drain.
        var drainTimerArmed = false
        /// Submissions since the last drain that may wait for the window.
        var mayWaitSubmitted = false
        /// When set, new requests fail at once with this error.
        var rejection: HTTP2Error?
        var status = HTTP2ClientConnection.Status()
    }

    let configuration: HTTP2ClientConnection.Configuration
    let eventLoop: EventLoop
    let defaultAuthority: String
    let defaultScheme: String
    let logger: Logger
    private let shared = Mutex(Shared())
    /// The published status's stream limit while the connection is usable, else -1: what a pool
    /// checks per request, without taking `shared`'s lock and copying the whole status.
    private let usableLimit = Atomic<Int>(-1)
    private var drainTask: (@Sendable () -> Void)?
    private let defaultTimeout: UInt64?
    /// ``HTTP2ClientConnection/Configuration/coalescingWindow`` in nanoseconds; 0 when off.
    private let coalescingWindow: UInt64
    let metrics: HTTP2ClientMetrics

    // Loop-thread state.
    var phase = Phase.connecting
    var channel: Channel?
    private var channelClosed = false
    var nghttp2: NGHTTP2Session?
    /// Requests waiting for a stream. Entries finished while waiting (cancelled, timed out) stay
    /// until they reach the front and are skipped then.
    private var waiting = FIFOQueue<ClientStream>()
    private var queuedCount = 0
    var open = OpenStreamList()
    private var defaultDeadlines = DeadlineList()
    private var customDeadlines = DeadlineHeap()
    private var deadlineTimer: TimerHandle?
    private var deadlineTimerAt: UInt64 = .max
    private var pendingSubmissions: [ClientStream] = []
    private var windowTimer: TimerHandle?
    private var pendingCancellations: [ClientStream] = []
    var settingsReceived = false
    var settingsWaiter: UnsafeContinuation<Void, any Error>?
    var goAway: HTTP2GoAway?
    private var failure: HTTP2Error?
    private var closeRequested = false
    private var closeWaiters: [UnsafeContinuation<Void, Never>] = []
    private var lastReadTime: UInt64 = 0
    private var pingTimer: TimerHandle?
    var pingTimeoutTimer: TimerHandle?
    var pingOutstanding = false
    private var published = HTTP2ClientConnection.Status()
    /// Streams of a failed session, kept alive until nghttp2 (which points at them) is gone.
    private var retired: [ClientStream] = []
    /// While nghttp2 processes received bytes, finished streams are resumed in one burst at the
    /// end of the read batch (after new output is written), not one by one in callbacks.
    private var deferringResumes = false
    private var pendingResumes: [(stream: ClientStream, waiter: ClientStream.Waiter, error: (any Error)?)] = []

    /// Output above this stays in nghttp2 until the socket drains.
    private static let outputHighWater = 1 << 20

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
        self.defaultTimeout = configuration.requestTimeout?.nanoseconds
        self.coalescingWindow = configuration.coalescingWindow?.nanoseconds ?? 0
        self.metrics = HTTP2ClientMetrics(registry: configuration.metrics)
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
            }
        )
        drainTask = { [unowned self] in self.drainInbox(.queuedTask) }
    }

    // MARK: any thread

    var status: HTTP2ClientConnection.Status {
        shared.withLock { $0.status }
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
        let (rejection, schedule) = shared.withLock { shared -> (HTTP2Error?, Bool) in
            if let rejection = shared.rejection { return (rejection, false) }
            shared.submissions.append(stream)
            if mayWaitForWindow { shared.mayWaitSubmitted = true }
            if shared.drainQueued || (mayWaitForWindow && shared.drainTimerArmed) { return (nil, false) }
            shared.drainQueued = true
            return (nil, true)
        }
        if let rejection {
            stream.phase = .done
            stream.waiter?.resume(stream, throwing: rejection)
            stream.waiter = nil
        } else if schedule, let drainTask {
            eventLoop.execute(drainTask)
        }
    }

    /// Asks the loop to cancel `stream` (reset it if open). Does not wait for the coalescing
    /// window.
    func cancel(_ stream: ClientStream) {
        let schedule = shared.withLock { shared -> Bool in
            shared.cancellations.append(stream)
            if shared.drainQueued { return false }
            shared.drainQueued = true
            return true
        }
        if schedule, let drainTask { eventLoop.execute(drainTask) }
    }

    /// Resolves once the peer's first SETTINGS frame arrived, or throws if the connection failed
    /// first or `deadline` passed.
    func waitForRemoteSettings(deadline: UInt64) async throws {
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                eventLoop.execute { [self] in
                    if let failure {
                        continuation.resume(throwing: failure)
                    } else if settingsReceived {
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
        shared.withLock { shared in
            if shared.rejection == nil {
                shared.rejection = HTTP2Error(
                    code: .connectionClosed,
                    isSafeToRetry: true,
                    message: "the HTTP/2 connection is closing and takes no new requests"
                )
            }
        }
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            eventLoop.execute { [self] in
                if channelClosed || (phase == .closed && channel == nil) {
                    continuation.resume()
                    return
                }
                closeWaiters.append(continuation)
                closeRequested = true
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

    // MARK: loop: requests

    /// What runs a drain of the inbox.
    private enum DrainCause {
        /// The task a submission or cancellation queued (`Shared.drainQueued`).
        case queuedTask
        /// The coalescing window's timer (`Shared.drainTimerArmed`).
        case windowTimer
        /// ``close()``, which drains before it closes.
        case closing
    }

    /// Opens what was submitted and cancels what was cancelled.
    private func drainInbox(_ cause: DrainCause) {
        let coalescingWindow = self.coalescingWindow
        let isClosed = phase == .closed
        if cause == .windowTimer { windowTimer = nil }
        let armTimer = shared.withLock { shared -> Bool in
            swap(&shared.submissions, &pendingSubmissions)
            swap(&shared.cancellations, &pendingCancellations)
            switch cause {
            case .queuedTask: shared.drainQueued = false
            case .windowTimer: shared.drainTimerArmed = false
            case .closing: break
            }
            let mayWaitSubmitted = shared.mayWaitSubmitted
            shared.mayWaitSubmitted = false
            // Requests that may wait came in, so more are likely: they wait for the timer instead
            // of waking the loop. None came in a whole window: the next one queues a drain at once.
            guard coalescingWindow > 0, mayWaitSubmitted, !shared.drainTimerArmed, !isClosed else { return false }
            shared.drainTimerArmed = true
            return true
        }
        if armTimer {
            // Holds the session until the timer runs (one window at most) or is cancelled by
            // `drainSoon()`, so that requests submitted meanwhile are always drained.
            let now = EventLoop.monotonicNanoseconds()
            let deadline = now &+ coalescingWindow < now ? UInt64.max : now &+ coalescingWindow
            windowTimer = eventLoop.scheduleTimer(at: deadline) { [self] in drainInbox(.windowTimer) }
        }
        for stream in pendingSubmissions {
            enqueue(stream)
        }
        pendingSubmissions.removeAll(keepingCapacity: pendingSubmissions.count <= 4096)
        for stream in pendingCancellations {
            cancelStream(stream)
        }
        pendingCancellations.removeAll(keepingCapacity: true)
        afterEvents()
    }

    private func enqueue(_ stream: ClientStream) {
        let now = stream.submittedAt
        if stream.cancelRequested {
            finish(stream, throwing: CancellationError())
            return
        }
        if let failure {
            finish(stream, throwing: failure.with(safeToRetry: true))
            return
        }
        if phase == .goingAway {
            finish(stream, throwing: goAwayError(safeToRetry: true))
            return
        }
        if let timeout = stream.timeoutOverride {
            guard timeout > 0 else {
                finish(stream, throwing: timeoutError(safeToRetry: true))
                return
            }
            stream.deadline = now &+ timeout
            customDeadlines.insert(stream)
        } else if let timeout = defaultTimeout {
            stream.deadline = now &+ timeout
            defaultDeadlines.append(stream)
        }
        stream.phase = .queued
        queuedCount += 1
        waiting.append(stream)
    }

    private func cancelStream(_ stream: ClientStream) {
        switch stream.phase {
        case .submitted:
            stream.cancelRequested = true
        case .queued:
            finish(stream, throwing: CancellationError())
        case .open:
            resetStream(stream)
            finish(stream, throwing: CancellationError())
        case .done:
            break
        }
    }

    func resetStream(_ stream: ClientStream) {
        guard let nghttp2, phase != .closed else { return }
        nghttp2_submit_rst_stream(
            nghttp2.pointer,
            UInt8(NGHTTP2_FLAG_NONE.rawValue),
            stream.streamID,
            HTTP2ErrorCode.cancel.rawValue
        )
    }

    /// Resumes the stream's waiter, which builds the response from the stream's fields.
    func finishWithResponse(_ stream: ClientStream) {
        guard let waiter = retire(stream) else { return }
        if deferringResumes {
            pendingResumes.append((stream, waiter, nil))
        } else {
            waiter.resume(stream, throwing: nil)
        }
    }

    func finish(_ stream: ClientStream, throwing error: any Error) {
        guard let waiter = retire(stream) else { return }
        if let error = error as? HTTP2Error {
            metrics.requestFailures.increment(labels: [
                ("cause", error.code.description), ("safe_to_retry", error.isSafeToRetry ? "true" : "false"),
            ])
        }
        if deferringResumes {
            pendingResumes.append((stream, waiter, error))
        } else {
            waiter.resume(stream, throwing: error)
        }
    }

    private func resumeDeferred() {
        deferringResumes = false
        guard !pendingResumes.isEmpty else { return }
        for (stream, waiter, error) in pendingResumes {
            waiter.resume(stream, throwing: error)
        }
        pendingResumes.removeAll(keepingCapacity: pendingResumes.count <= 4096)
    }

    /// Takes the stream's waiter (once) and forgets its deadline and queue slot.
    func retire(_ stream: ClientStream) -> ClientStream.Waiter? {
        guard stream.phase != .done, let waiter = stream.waiter else { return nil }
        if stream.phase == .queued { queuedCount -= 1 }
        stream.phase = .done
        stream.waiter = nil
        if stream.inTimeoutList {
            defaultDeadlines.remove(stream)
        } else if stream.heapIndex >= 0 {
            customDeadlines.remove(stream)
        }
        return waiter
    }

    /// Opens streams from the queue while the peer's limit allows.
    private func startStreams() {
        guard phase == .ready, !waiting.isEmpty, let nghttp2 else { return }
        let remote = Int(nghttp2.remoteSetting(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
        let limit = min(remote, configuration.maximumConcurrentStreams)
        while open.count < limit, phase == .ready, let stream = waiting.popFirst() {
            guard stream.phase == .queued else { continue }
            queuedCount -= 1
            open(stream, in: nghttp2)
        }
    }

    func open(_ stream: ClientStream, in nghttp2: NGHTTP2Session) {
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
            if streamID == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE.rawValue {
                let error = HTTP2Error(
                    code: .streamIDsExhausted,
                    isSafeToRetry: true,
                    message: "the HTTP/2 connection has used all stream ids; open a new connection"
                )
                finish(stream, throwing: error)
                stopTakingRequests(error)
            } else {
                finish(
                    stream,
                    throwing: HTTP2Error(
                        code: .protocolError,
                        isSafeToRetry: true,
                        message: "nghttp2 refused the request: \(String(cString: nghttp2_strerror(streamID)))"
                    )
                )
            }
            return
        }
        stream.streamID = streamID
        stream.phase = .open
        open.insert(stream)
    }

    /// No new streams on this connection: fail what waits (safe to retry) and close once the
    /// open streams are done.
    func stopTakingRequests(_ error: HTTP2Error) {
        shared.withLock { shared in
            if shared.rejection == nil { shared.rejection = error }
        }
        drainSoon()
        if phase == .ready || phase == .connecting { phase = .goingAway }
        for stream in waiting.removeAll() where stream.phase == .queued {
            finish(stream, throwing: error.with(safeToRetry: true))
        }
        queuedCount = 0
    }

    // MARK: loop: output

    /// Moves nghttp2's pending frames into the channel and writes them.
    private func flushSession() {
        guard let channel, let nghttp2, phase != .closed else { return }
        while channel.pendingWriteBytes < Self.outputHighWater {
            switch nghttp2.nextOutput() {
            case .bytes(let bytes):
                channel.write(bytes)
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
    private func afterEvents() {
        startStreams()
        flushSession()
        closeIfDone()
        armDeadlineTimer()
        publishStatus()
    }

    private func closeIfDone() {
        guard phase != .closed, phase != .connecting || closeRequested else { return }
        guard closeRequested || phase == .goingAway else { return }
        guard open.isEmpty, queuedCount == 0 else { return }
        let hasInbox = shared.withLock { !$0.submissions.isEmpty }
        if hasInbox { return }
        if let nghttp2, goAway == nil {
            nghttp2_session_terminate_session(nghttp2.pointer, HTTP2ErrorCode.noError.rawValue)
            flushSession()
        }
        failConnection(
            HTTP2Error(code: .connectionClosed, isSafeToRetry: true, message: "the HTTP/2 connection was closed"),
            closeMode: .graceful
        )
    }

    // MARK: loop: timers

    private func armDeadlineTimer() {
        guard phase != .closed else { return }
        let earliest = min(defaultDeadlines.first?.deadline ?? .max, customDeadlines.first?.deadline ?? .max)
        guard earliest != .max, earliest < deadlineTimerAt else { return }
        if let deadlineTimer { eventLoop.cancelTimer(deadlineTimer) }
        deadlineTimerAt = earliest
        deadlineTimer = eventLoop.scheduleTimer(at: earliest) { [self] in
            deadlineTimer = nil
            deadlineTimerAt = .max
            let now = EventLoop.monotonicNanoseconds()
            while let stream = defaultDeadlines.first, stream.deadline <= now {
                timeOut(stream)
            }
            while let stream = customDeadlines.first, stream.deadline <= now {
                timeOut(stream)
            }
            afterEvents()
        }
    }

    private func timeOut(_ stream: ClientStream) {
        switch stream.phase {
        case .queued:
            finish(stream, throwing: timeoutError(safeToRetry: true))
        case .open:
            let safe = !stream.headersSent
            resetStream(stream)
            finish(stream, throwing: timeoutError(safeToRetry: safe))
        case .submitted, .done:
            defaultDeadlines.remove(stream)
            customDeadlines.remove(stream)
        }
    }

    private func schedulePingCheck(at time: UInt64) {
        if let pingTimer { eventLoop.cancelTimer(pingTimer) }
        pingTimer = eventLoop.scheduleTimer(at: time) { [self] in
            pingTimer = nil
            pingCheck()
        }
    }

    private func pingCheck() {
        guard let interval = configuration.pingInterval?.nanoseconds, phase == .ready || phase == .goingAway,
            let nghttp2
        else { return }
        let now = EventLoop.monotonicNanoseconds()
        if !pingOutstanding, now &- lastReadTime >= interval {
            nghttp2_submit_ping(nghttp2.pointer, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
            pingOutstanding = true
            let timeout = configuration.pingTimeout
            pingTimeoutTimer = eventLoop.scheduleTimer(after: timeout) { [self] in
                pingTimeoutTimer = nil
                guard pingOutstanding else { return }
                logger.warning(
                    "HTTP/2 PING not answered; closing the connection",
                    metadata: ["authority": .string(defaultAuthority)]
                )
                failConnection(
                    HTTP2Error(
                        code: .pingTimeout,
                        isSafeToRetry: false,
                        message: "the server did not answer a PING within \(timeout); the connection is closed"
                    )
                )
            }
            flushSession()
            schedulePingCheck(at: now &+ interval)
        } else {
            schedulePingCheck(at: max(lastReadTime &+ interval, now &+ 1_000_000))
        }
    }

    // MARK: loop: failure and status

    private func timeoutError(safeToRetry: Bool) -> HTTP2Error {
        HTTP2Error(
            code: .requestTimeout,
            isSafeToRetry: safeToRetry,
            message: safeToRetry
                ? "the request timed out before it was sent" : "the request timed out waiting for the response"
        )
    }

    func goAwayError(safeToRetry: Bool) -> HTTP2Error {
        let goAway = goAway ?? HTTP2GoAway(lastStreamID: 0, errorCode: .noError, debugData: [])
        var message = "the server sent GOAWAY (\(goAway.errorCode)"
        if let reason = goAway.reason {
            message += ", reason \(reason)"
        } else if !goAway.debugData.isEmpty {
            message += ", \(goAway.debugText)"
        }
        message += ")"
        message += safeToRetry ? "; the request was not processed" : ""
        return HTTP2Error(
            code: .goAway,
            isSafeToRetry: safeToRetry,
            message: message,
            goAway: goAway,
            errorCode: goAway.errorCode
        )
    }

    /// Fails every stream, closes the channel and forgets the nghttp2 session (on a later loop
    /// iteration, since this may run inside an nghttp2 callback).
    func failConnection(_ error: HTTP2Error, closeMode: Channel.CloseMode = .abort) {
        guard phase != .closed else { return }
        phase = .closed
        failure = error
        if !(closeRequested || goAway != nil) || error.code != .connectionClosed {
            metrics.connectionFailures.increment(labels: [("cause", error.code.description)])
        }
        shared.withLock { shared in
            if shared.rejection == nil || error.code != .connectionClosed {
                shared.rejection = error.with(safeToRetry: true)
            }
        }
        drainSoon()
        publishStatus()  // before any continuation resumes
        for stream in open.removeAll() {
            retired.append(stream)
            finish(stream, throwing: error.with(safeToRetry: error.isSafeToRetry || !stream.headersSent))
        }
        for stream in waiting.removeAll() where stream.phase == .queued {
            finish(stream, throwing: error.with(safeToRetry: true))
        }
        queuedCount = 0
        defaultDeadlines.removeAll()
        customDeadlines.removeAll()
        for timer in [deadlineTimer, pingTimer, pingTimeoutTimer].compactMap({ $0 }) {
            eventLoop.cancelTimer(timer)
        }
        deadlineTimer = nil
        pingTimer = nil
        pingTimeoutTimer = nil
        if let settingsWaiter {
            self.settingsWaiter = nil
            settingsWaiter.resume(throwing: error)
        }
        if let channel {
            channel.close(mode: closeMode)
        } else {
            channelClosed = true
            resumeCloseWaiters()
        }
        eventLoop.execute { [self] in
            nghttp2 = nil
            retired = []
        }
        publishStatus()
        resumeDeferred()
    }

    /// Requests waiting for the coalescing window are drained on the next iteration, not when
    /// the window's timer would fire: after GOAWAY or a failure they fail (safe to retry) at once.
    private func drainSoon() {
        let queue = shared.withLock { shared -> Bool in
            shared.drainTimerArmed = false
            guard !shared.drainQueued, !shared.submissions.isEmpty || !shared.cancellations.isEmpty else {
                return false
            }
            shared.drainQueued = true
            return true
        }
        if let windowTimer {
            eventLoop.cancelTimer(windowTimer)
            self.windowTimer = nil
        }
        if queue, let drainTask { eventLoop.execute(drainTask) }
    }

    private func resumeCloseWaiters() {
        let waiters = closeWaiters
        closeWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    func publishStatus() {
        var status = HTTP2ClientConnection.Status()
        status.isUsable = phase == .ready && !closeRequested
        status.isClosed = phase == .closed
        if let nghttp2, phase != .closed {
            status.maxConcurrentStreams = min(
                Int(nghttp2.remoteSetting(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)),
                configuration.maximumConcurrentStreams
            )
        }
        status.activeStreams = open.count
        status.queuedRequests = queuedCount
        status.goAway = goAway
        status.failure = phase == .closed ? failure : nil
        guard status != published else { return }
        published = status
        shared.withLock { $0.status = status }
        usableLimit.store(status.isUsable ? status.maxConcurrentStreams : -1, ordering: .releasing)
    }

    // MARK: ChannelHandler

    func channelActive(_ channel: Channel) {
        self.channel = channel
        lastReadTime = EventLoop.monotonicNanoseconds()
        guard let nghttp2 else { return }
        var settings: [(id: nghttp2_settings_id, value: UInt32)] = [
            (NGHTTP2_SETTINGS_ENABLE_PUSH, 0),
            (NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, UInt32(clamping: configuration.initialStreamWindowSize)),
        ]
        settings.append((NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 0))
        _ = nghttp2.submitSettings(settings)
        if configuration.connectionWindowSize > 65_535 {
            nghttp2_session_set_local_window_size(
                nghttp2.pointer,
                UInt8(NGHTTP2_FLAG_NONE.rawValue),
                0,
                Int32(clamping: configuration.connectionWindowSize)
            )
        }
        flushSession()
        if let interval = configuration.pingInterval {
            schedulePingCheck(at: lastReadTime &+ interval.nanoseconds)
        }
    }

    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        guard phase != .closed, let nghttp2 else { return }
        lastReadTime = eventLoop.iterationTime
        deferringResumes = true
        if let reason = nghttp2.receive(bytes) {
            failConnection(
                HTTP2Error(code: .protocolError, isSafeToRetry: false, message: "HTTP/2 protocol error: \(reason)")
            )
        }
    }

    func channelReadComplete(_ channel: Channel) {
        // A drain already queued on the loop opens streams and writes this iteration: leave the
        // output to it, so that one write carries both. One waiting for the coalescing timer is
        // not waited for: answers to the peer (SETTINGS and PING acknowledgements, window
        // updates) and queued streams that closed streams made room for go out now.
        if !shared.withLock({ $0.drainQueued }) {
            afterEvents()
        }
        resumeDeferred()
    }

    func channelWritable(_ channel: Channel) {
        flushSession()
        publishStatus()
    }

    func channelInactive(_ channel: Channel, error: (any Error)?) {
        channelClosed = true
        self.channel = nil
        if phase != .closed {
            let message =
                error.map { "the HTTP/2 connection failed: \($0)" } ?? "the server closed the HTTP/2 connection"
            failConnection(
                HTTP2Error(
                    code: .connectionClosed,
                    isSafeToRetry: false,
                    message: message,
                    goAway: goAway,
                    underlying: error
                )
            )
        }
        resumeDeferred()
        resumeCloseWaiters()
        publishStatus()
    }
}
