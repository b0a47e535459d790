import CNGHTTP2
import HeraldCore
import HeraldIO
import Synchronization

/// The client session's timers (request deadlines, PING) and its channel events: loop thread.
extension ClientSession {
    // MARK: loop: timers

    func armDeadlineTimer() {
        guard state.phase != .closed, let earliest = state.nextDeadline(), earliest < deadlineTimerAt else { return }
        if let deadlineTimer { eventLoop.cancelTimer(deadlineTimer) }
        deadlineTimerAt = earliest
        deadlineTimer = eventLoop.scheduleTimer(at: earliest) { [self] in
            deadlineTimer = nil
            deadlineTimerAt = .max
            let now = EventLoop.monotonicNanoseconds()
            withActions { state.deadlinesPassed(now: now, actions: &$0) }
            afterEvents()
        }
    }

    func schedulePingCheck(at time: UInt64) {
        if let pingTimer { eventLoop.cancelTimer(pingTimer) }
        pingTimer = eventLoop.scheduleTimer(at: time) { [self] in
            pingTimer = nil
            pingCheck()
        }
    }

    func pingCheck() {
        guard let interval = configuration.pingInterval?.nanoseconds, let nghttp2 else { return }
        let now = EventLoop.monotonicNanoseconds()
        switch state.pingCheck(now: now, lastRead: lastReadTime, interval: interval) {
        case .sendPing(let nextCheck):
            nghttp2_submit_ping(nghttp2.pointer, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
            let timeout = configuration.pingTimeout
            pingTimeoutTimer = eventLoop.scheduleTimer(after: timeout) { [self] in
                pingTimeoutTimer = nil
                guard state.pingTimedOut() else { return }
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
            schedulePingCheck(at: nextCheck)
        case .checkAgain(let time):
            schedulePingCheck(at: time)
        case .stop:
            break
        }
    }

    // MARK: loop: status

    func resumeCloseWaiters() {
        let waiters = closeWaiters
        closeWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    func publishStatus() {
        let status = state.status
        guard status != published else { return }
        published = status
        inbox.withLock { $0.status = status }
        usableLimit.store(status.isUsable ? status.maxConcurrentStreams : -1, ordering: .releasing)
    }

    // MARK: ChannelHandler

    func channelActive(_ channel: Channel) {
        self.channel = channel
        lastReadTime = EventLoop.monotonicNanoseconds()
        guard let nghttp2 else { return }
        let local = State.localSettings(
            initialStreamWindowSize: configuration.initialStreamWindowSize,
            connectionWindowSize: configuration.connectionWindowSize
        )
        _ = nghttp2.submitSettings(local.settings.map { (nghttp2_settings_id(rawValue: $0.id), $0.value) })
        if let window = local.connectionWindow {
            nghttp2_session_set_local_window_size(nghttp2.pointer, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, window)
        }
        flushSession()
        if let interval = configuration.pingInterval {
            schedulePingCheck(at: lastReadTime &+ interval.nanoseconds)
        }
    }

    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        guard state.phase != .closed, let nghttp2 else { return }
        lastReadTime = eventLoop.iterationTime
        deferringResumes = true
        guard let failure = nghttp2.receive(bytes) else { return }
        if failure.code == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS.rawValue {
            // A header block in more frames than ``State/maximumContinuations`` allows: a
            // CONTINUATION flood, dropped like any other oversized header list.
            headerListTooLarge(.continuations(limit: State.maximumContinuations))
        } else {
            // Also after a header callback refused a field: the state has closed already.
            failConnection(
                HTTP2Error(
                    code: .protocolError,
                    isSafeToRetry: false,
                    message: "HTTP/2 protocol error: \(failure.reason)"
                )
            )
        }
    }

    func channelReadComplete(_ channel: Channel) {
        // A drain already queued on the loop opens streams and writes this iteration: leave the
        // output to it, so that one write carries both. One waiting for the coalescing timer is
        // not waited for: answers to the peer (SETTINGS and PING acknowledgements, window
        // updates) and queued streams that closed streams made room for go out now.
        if !inbox.withLock({ $0.drainQueued }) {
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
        if state.phase != .closed {
            let message =
                error.map { "the HTTP/2 connection failed: \($0)" } ?? "the server closed the HTTP/2 connection"
            failConnection(
                HTTP2Error(
                    code: .connectionClosed,
                    isSafeToRetry: false,
                    message: message,
                    goAway: state.goAway,
                    underlying: error
                )
            )
        }
        resumeDeferred()
        resumeCloseWaiters()
        publishStatus()
    }
}
