import HeraldCore

/// Names one request inside a ``ClientSessionState``: its slot and the slot's generation, so an
/// id kept past the request's end (a late cancellation) matches nothing.
struct ClientRequestID: Equatable {
    var slot: Int32
    var generation: UInt32
}

/// The bookkeeping of one HTTP/2 client connection, as a value: which requests wait for a
/// stream, which streams are open, their deadlines, the peer's stream limit, GOAWAY, PING and
/// closing. nghttp2 does the HTTP/2 itself; ``ClientSession`` (the loop-thread shell) feeds this
/// the events it sees and runs the ``Action``s that come back.
///
/// `Request` is what the shell hands in and gets back in actions (a ``ClientStream`` in
/// production, any value in tests). Open requests stay here, retained, until nghttp2 closes
/// their stream, even after their waiter has been answered: nghttp2 points at them until then.
struct ClientSessionState<Request> {
    enum Phase: Equatable {
        /// Waiting for the channel and the peer's first SETTINGS.
        case connecting
        /// Opening streams.
        case ready
        /// GOAWAY received or stream ids used up: no new streams; open ones finish, then the
        /// connection closes.
        case goingAway
        /// Closed or failed.
        case closed
    }

    private enum SlotState {
        case free, queued, open
    }

    private struct Slot {
        var request: Request?
        var generation: UInt32 = 0
        var state = SlotState.free
        /// Open slots: the waiter has been answered; the slot stays until nghttp2 closes the stream.
        var answered = false
        var streamID: Int32 = 0
        /// nghttp2 has sent the HEADERS frame: from here on the server may process the request.
        var headersSent = false
        /// The slot has an entry in `deadlines`.
        var hasDeadline = false
    }

    let defaultTimeout: UInt64?
    /// ``HTTP2ClientConnection/Configuration/maximumConcurrentStreams``.
    let maximumConcurrentStreams: Int

    private(set) var phase = Phase.connecting
    private(set) var settingsReceived = false
    private(set) var goAway: HTTP2GoAway?
    private(set) var failure: HTTP2Error?
    private(set) var closeRequested = false
    private(set) var pingOutstanding = false
    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS (1 until its SETTINGS say otherwise).
    private(set) var remoteMaxConcurrentStreams = 1
    /// Open streams, answered or not, until nghttp2 closes them.
    private(set) var openCount = 0
    /// Requests waiting for a stream.
    private(set) var queuedCount = 0

    private var slots: [Slot] = []
    private var freeSlots: [Int32] = []
    /// Waiting requests in arrival order; entries answered while waiting are skipped.
    private var waiting = FIFOQueue<ClientRequestID>()
    private var deadlines = ClientRequestDeadlines()

    init(defaultTimeout: UInt64?, maximumConcurrentStreams: Int) {
        self.defaultTimeout = defaultTimeout
        self.maximumConcurrentStreams = maximumConcurrentStreams
    }

    // MARK: requests

    /// A request reached the loop. Fails it at once when it was cancelled, the connection failed
    /// or is going away, or its own timeout is zero; otherwise queues it with its deadline.
    /// - Returns: the request's id while it stays, nil when it was answered.
    mutating func submit(
        _ request: Request,
        at submittedAt: UInt64,
        timeoutOverride: UInt64?,
        cancelled: Bool,
        actions: inout [Action]
    ) -> ClientRequestID? {
        if cancelled {
            actions.append(.fail(request, .cancelled))
            return nil
        }
        if let failure {
            actions.append(.fail(request, .error(failure.with(safeToRetry: true))))
            return nil
        }
        if phase == .goingAway {
            actions.append(.fail(request, .error(goAwayError(safeToRetry: true))))
            return nil
        }
        if timeoutOverride == 0 {
            actions.append(.fail(request, .error(Self.timeoutError(safeToRetry: true))))
            return nil
        }
        let timeout = timeoutOverride ?? defaultTimeout
        let id = allocateSlot(request, hasDeadline: timeout != nil)
        if let timeout {
            deadlines.insert(
                .init(time: submittedAt &+ timeout, slot: id.slot, generation: id.generation),
                inSubmissionOrder: timeoutOverride == nil
            )
        }
        queuedCount += 1
        waiting.append(id)
        return id
    }

    /// The request's task was cancelled: drop it if queued, reset its stream if open.
    mutating func cancel(_ id: ClientRequestID, actions: inout [Action]) {
        guard let index = liveIndex(id), !slots[index].answered else { return }
        if slots[index].state == .open { actions.append(.resetStream(slots[index].streamID)) }
        answer(index, .cancelled, actions: &actions)
    }

    /// The next waiting request to open a stream for, if the phase and the stream limit allow;
    /// it counts as open from here. The shell submits it to nghttp2, then reports
    /// ``streamOpened(_:streamID:)`` or ``openFailed(_:idsExhausted:reason:actions:)``.
    mutating func nextRequestToOpen() -> (ClientRequestID, Request)? {
        guard phase == .ready, openCount < streamLimit else { return nil }
        while let id = waiting.popFirst() {
            let index = Int(id.slot)
            guard slots[index].generation == id.generation, slots[index].state == .queued,
                let request = slots[index].request
            else { continue }
            queuedCount -= 1
            openCount += 1
            slots[index].state = .open
            return (id, request)
        }
        return nil
    }

    mutating func streamOpened(_ id: ClientRequestID, streamID: Int32) {
        guard let index = liveIndex(id) else { return }
        slots[index].streamID = streamID
    }

    /// nghttp2 refused to open the stream: the request fails (safe to retry, nothing was sent);
    /// with `idsExhausted` the connection takes no new requests either.
    mutating func openFailed(
        _ id: ClientRequestID,
        idsExhausted: Bool,
        reason: String,
        actions: inout [Action]
    ) {
        guard let index = liveIndex(id) else { return }
        let error =
            idsExhausted
            ? HTTP2Error(
                code: .streamIDsExhausted,
                isSafeToRetry: true,
                message: "the HTTP/2 connection has used all stream ids; open a new connection"
            )
            : HTTP2Error(code: .protocolError, isSafeToRetry: true, message: "nghttp2 refused the request: \(reason)")
        answer(index, .error(error), actions: &actions)
        release(index)
        if idsExhausted { stopTakingRequests(error, actions: &actions) }
    }

    /// Whether the request's stream still collects its response (open and not answered).
    func isReceiving(_ id: ClientRequestID) -> Bool {
        guard phase != .closed, let index = liveIndex(id) else { return false }
        return slots[index].state == .open && !slots[index].answered
    }

    /// nghttp2 sent the request's HEADERS: a timeout from now on is not safe to retry.
    mutating func headersSent(_ id: ClientRequestID) {
        guard let index = liveIndex(id) else { return }
        slots[index].headersSent = true
    }

    /// The response body passed the limit: reset the stream and fail the request.
    mutating func responseTooLarge(_ id: ClientRequestID, limit: Int, actions: inout [Action]) {
        guard let index = liveIndex(id), slots[index].state == .open, !slots[index].answered else { return }
        actions.append(.resetStream(slots[index].streamID))
        let error = HTTP2Error(
            code: .responseTooLarge,
            isSafeToRetry: false,
            message: "the response body exceeds \(limit) bytes"
        )
        answer(index, .error(error), actions: &actions)
    }

    /// The peer sent more header data than the client takes (``HeaderListExcess``): the
    /// connection is dropped, as for any broken peer. Every request fails; one whose HEADERS were
    /// sent is not safe to retry (the server may have processed it).
    mutating func headerListTooLarge(_ excess: HeaderListExcess, actions: inout [Action]) {
        let error = HTTP2Error(
            code: .headerListTooLarge,
            isSafeToRetry: false,
            message: "the server sent \(excess.description); the HTTP/2 connection was dropped"
        )
        fail(error, actions: &actions)
    }

    /// nghttp2 could not send the HEADERS of the request on `streamID` (reset while queued in
    /// nghttp2, GOAWAY, or the session is closing) and drops the stream; the shell has cleared
    /// its user data. Found by a search: this is rare.
    mutating func headersNotSent(streamID: Int32, reason: String, actions: inout [Action]) {
        guard phase != .closed,
            let index = slots.indices.first(where: { slots[$0].state == .open && slots[$0].streamID == streamID })
        else { return }
        let error =
            goAway != nil
            ? goAwayError(safeToRetry: true)
            : HTTP2Error(
                code: .connectionClosed,
                isSafeToRetry: true,
                message: "the request could not be sent: \(reason)"
            )
        answer(index, .error(error), actions: &actions)
        release(index)
    }

    /// nghttp2 closed the request's stream: a final status with NO_ERROR answers it with the
    /// response; anything else fails it, safe to retry when the server did not process it.
    mutating func streamClosed(
        _ id: ClientRequestID,
        errorCode code: HTTP2ErrorCode,
        status: Int,
        actions: inout [Action]
    ) {
        guard phase != .closed, let index = liveIndex(id), slots[index].state == .open else { return }
        defer { release(index) }
        guard !slots[index].answered else { return }
        if code == .noError, status >= 200 {
            if let request = slots[index].request { actions.append(.succeed(request)) }
            markAnswered(index)
            return
        }
        let error: HTTP2Error
        if let goAway, Int(slots[index].streamID) > goAway.lastStreamID {
            error = goAwayError(safeToRetry: true)
        } else if code == .refusedStream {
            error = HTTP2Error(
                code: .streamRefused,
                isSafeToRetry: true,
                message: "the server refused the stream (REFUSED_STREAM); the request was not processed",
                errorCode: code
            )
        } else if code == .noError {
            error = HTTP2Error(
                code: .protocolError,
                isSafeToRetry: false,
                message: "the stream ended without a final response status"
            )
        } else {
            error = HTTP2Error(
                code: .streamReset,
                isSafeToRetry: false,
                message: "the server reset the stream (\(code))",
                errorCode: code
            )
        }
        answer(index, .error(error), actions: &actions)
    }

    // MARK: deadlines

    /// The earliest deadline of a request still waiting for its answer, dropping ended ones.
    mutating func nextDeadline() -> UInt64? {
        let slots = self.slots
        return deadlines.earliest(isLive: { Self.isLive($0, in: slots) })
    }

    /// Deadline entries kept, those of ended requests not yet dropped included.
    var deadlineEntries: Int { deadlines.count }

    /// Times out every request whose deadline is at or before `now`: a queued one fails safe to
    /// retry; an open one is reset and fails, safe to retry only if its HEADERS were not sent.
    mutating func deadlinesPassed(now: UInt64, actions: inout [Action]) {
        while let deadline = popDueDeadline(now: now) {
            let index = Int(deadline.slot)
            slots[index].hasDeadline = false
            if slots[index].state == .open {
                actions.append(.resetStream(slots[index].streamID))
                answer(index, .error(Self.timeoutError(safeToRetry: !slots[index].headersSent)), actions: &actions)
            } else {
                answer(index, .error(Self.timeoutError(safeToRetry: true)), actions: &actions)
            }
        }
    }

    // MARK: connection

    /// The peer's SETTINGS arrived with its current stream limit.
    /// - Returns: true for the first SETTINGS, which makes the connection ready.
    mutating func settingsReceived(maxConcurrentStreams: Int) -> Bool {
        guard phase != .closed else { return false }
        remoteMaxConcurrentStreams = maxConcurrentStreams
        guard !settingsReceived else { return false }
        settingsReceived = true
        if phase == .connecting { phase = .ready }
        return true
    }

    /// GOAWAY: no new streams; waiting requests fail safe to retry; open ones finish (those above
    /// the last stream id fail when nghttp2 closes them).
    mutating func goAwayReceived(_ goAway: HTTP2GoAway, actions: inout [Action]) {
        guard phase != .closed else { return }
        self.goAway = goAway
        stopTakingRequests(goAwayError(safeToRetry: true), actions: &actions)
    }

    /// ``HTTP2ClientConnection/close()``: take no new requests, close once the rest is done.
    mutating func requestClose() {
        closeRequested = true
    }

    /// Whether the connection should now close gracefully: closing was asked for or a GOAWAY
    /// came, and nothing is queued or open (`inboxIsEmpty`: nor waiting to reach the loop).
    func shouldClose(inboxIsEmpty: Bool) -> Bool {
        guard phase != .closed, phase != .connecting || closeRequested else { return false }
        guard closeRequested || phase == .goingAway else { return false }
        return openCount == 0 && queuedCount == 0 && inboxIsEmpty
    }

    /// The connection failed or closed: every request still waiting for its answer fails (an
    /// open one safe to retry only if its HEADERS were not sent or `error` is itself safe).
    mutating func fail(_ error: HTTP2Error, graceful: Bool = false, actions: inout [Action]) {
        guard phase != .closed else { return }
        phase = .closed
        failure = error
        pingOutstanding = false
        var retired: [Request] = []
        var failures: [Action] = []
        for index in slots.indices where slots[index].state == .open {
            if let request = slots[index].request {
                retired.append(request)
                if !slots[index].answered {
                    let safe = error.isSafeToRetry || !slots[index].headersSent
                    failures.append(.fail(request, .error(error.with(safeToRetry: safe))))
                }
            }
        }
        while let id = waiting.popFirst() {
            let index = Int(id.slot)
            guard slots[index].generation == id.generation, slots[index].state == .queued,
                let request = slots[index].request
            else { continue }
            failures.append(.fail(request, .error(error.with(safeToRetry: true))))
        }
        slots = []
        freeSlots = []
        deadlines.removeAll()
        openCount = 0
        queuedCount = 0
        let isFailure = !(closeRequested || goAway != nil) || error.code != .connectionClosed
        actions.append(
            .closeConnection(Closing(error: error, graceful: graceful, isFailure: isFailure, retired: retired))
        )
        actions.append(contentsOf: failures)
    }

    // MARK: PING

    /// The PING timer fired at `now`; the peer was last heard from at `lastRead`.
    mutating func pingCheck(now: UInt64, lastRead: UInt64, interval: UInt64) -> PingDecision {
        guard phase == .ready || phase == .goingAway else { return .stop }
        if !pingOutstanding, now &- lastRead >= interval {
            pingOutstanding = true
            return .sendPing(nextCheck: now &+ interval)
        }
        return .checkAgain(at: max(lastRead &+ interval, now &+ 1_000_000))
    }

    mutating func pingAcknowledged() {
        pingOutstanding = false
    }

    /// The PING timeout passed: true when the PING is still unanswered (fail the connection).
    func pingTimedOut() -> Bool {
        pingOutstanding && phase != .closed
    }

    // MARK: private

    private mutating func stopTakingRequests(_ error: HTTP2Error, actions: inout [Action]) {
        actions.append(.rejectNewRequests(error))
        if phase == .ready || phase == .connecting { phase = .goingAway }
        while let id = waiting.popFirst() {
            guard let index = liveIndex(id), slots[index].state == .queued else { continue }
            answer(index, .error(error.with(safeToRetry: true)), actions: &actions)
        }
    }

    private func liveIndex(_ id: ClientRequestID) -> Int? {
        let index = Int(id.slot)
        guard index >= 0, index < slots.count, slots[index].generation == id.generation,
            slots[index].state != .free
        else { return nil }
        return index
    }

    private static func isLive(_ deadline: ClientRequestDeadlines.Entry, in slots: [Slot]) -> Bool {
        let index = Int(deadline.slot)
        return index < slots.count && slots[index].generation == deadline.generation && slots[index].hasDeadline
    }

    /// A queued slot for `request`, written at once (one write instead of one per field).
    private mutating func allocateSlot(_ request: Request, hasDeadline: Bool) -> ClientRequestID {
        if let free = freeSlots.popLast() {
            let index = Int(free)
            let generation = slots[index].generation
            slots[index] = Slot(request: request, generation: generation, state: .queued, hasDeadline: hasDeadline)
            return ClientRequestID(slot: free, generation: generation)
        }
        slots.append(Slot(request: request, state: .queued, hasDeadline: hasDeadline))
        return ClientRequestID(slot: Int32(slots.count - 1), generation: 0)
    }

    /// Answers the request with `failure` (once) and forgets its deadline; a queued request's
    /// slot is freed, an open one's stays until nghttp2 closes the stream.
    private mutating func answer(_ index: Int, _ failure: Failure, actions: inout [Action]) {
        guard !slots[index].answered, let request = slots[index].request else { return }
        actions.append(.fail(request, failure))
        markAnswered(index)
    }

    private mutating func markAnswered(_ index: Int) {
        slots[index].answered = true
        if slots[index].hasDeadline {
            slots[index].hasDeadline = false
            if deadlines.forget() { dropStaleDeadlines() }
        }
        if slots[index].state == .queued {
            queuedCount -= 1
            release(index)
        }
    }

    /// Frees the slot (the request is released and the id matches nothing from now on).
    private mutating func release(_ index: Int) {
        if slots[index].state == .open { openCount -= 1 }
        if slots[index].hasDeadline {
            slots[index].hasDeadline = false
            if deadlines.forget() { dropStaleDeadlines() }
        }
        slots[index].state = .free
        slots[index].request = nil
        slots[index].generation &+= 1
        freeSlots.append(Int32(index))
    }

    /// The next live deadline due at `now`, taken out. (The copy of `slots` the check reads ends
    /// with this call, before the caller writes to them.)
    private mutating func popDueDeadline(now: UInt64) -> ClientRequestDeadlines.Entry? {
        let slots = self.slots
        return deadlines.popDue(now: now, isLive: { Self.isLive($0, in: slots) })
    }

    private mutating func dropStaleDeadlines() {
        let slots = self.slots
        deadlines.dropStale(isLive: { Self.isLive($0, in: slots) })
    }
}
