/// What other threads hand a ``ClientSession`` and read from it, kept in its `Mutex`: the
/// submissions and cancellations not yet seen by the loop, whether a drain is on its way, the
/// coalescing window's rules, and the published status.
///
/// With a coalescing window, a drain that found requests which may wait arms a timer for the next
/// one, and such requests submitted meanwhile wait for it instead of waking the loop: under
/// sustained load they leave once per window, in one write. The first request after a quiet
/// window, awaited requests, cancellations, GOAWAY, failure and close all drain at once.
struct ClientSessionInbox<Request> {
    /// What runs a drain of the inbox.
    enum DrainCause {
        /// The task a submission or cancellation queued.
        case queuedTask
        /// The coalescing window's timer.
        case windowTimer
        /// ``ClientSession/close()``, which drains before it closes.
        case closing
    }

    /// What a submission leads to.
    enum SubmitDecision {
        /// The connection takes no new requests: fail the request with this at once.
        case rejected(HTTP2Error)
        /// Queued; a drain (queued task or window timer) will take it.
        case queued
        /// Queued; queue a drain task on the loop.
        case queuedDrainNeeded
    }

    private(set) var submissions: [Request] = []
    private(set) var cancellations: [Request] = []
    /// A drain task is queued on the loop.
    private(set) var drainQueued = false
    /// The coalescing window's timer will drain the inbox when it fires.
    private(set) var windowTimerArmed = false
    /// Submissions since the last drain that may wait for the window.
    private(set) var mayWaitSubmitted = false
    /// When set, new requests fail at once with this error.
    private(set) var rejection: HTTP2Error?
    /// The status other threads read.
    var status = HTTP2ClientConnection.Status()

    mutating func submit(_ request: Request, mayWaitForWindow: Bool) -> SubmitDecision {
        if let rejection { return .rejected(rejection) }
        submissions.append(request)
        if mayWaitForWindow { mayWaitSubmitted = true }
        if drainQueued || (mayWaitForWindow && windowTimerArmed) { return .queued }
        drainQueued = true
        return .queuedDrainNeeded
    }

    /// Cancellations never wait for the window.
    /// - Returns: true when a drain task must be queued.
    mutating func cancel(_ request: Request) -> Bool {
        cancellations.append(request)
        if drainQueued { return false }
        drainQueued = true
        return true
    }

    /// Takes the submissions and cancellations into the (empty) arrays given, for a drain
    /// started by `cause`.
    /// - Parameters:
    ///   - coalescing: a coalescing window is configured.
    ///   - isClosed: the connection is closed (no window timer then).
    /// - Returns: true when the caller must arm the window timer: requests that may wait came in,
    ///   so more are likely, and they wait for the timer instead of waking the loop.
    mutating func drain(
        _ cause: DrainCause,
        submissions: inout [Request],
        cancellations: inout [Request],
        coalescing: Bool,
        isClosed: Bool
    ) -> Bool {
        swap(&self.submissions, &submissions)
        swap(&self.cancellations, &cancellations)
        switch cause {
        case .queuedTask: drainQueued = false
        case .windowTimer: windowTimerArmed = false
        case .closing: break
        }
        let mayWait = mayWaitSubmitted
        mayWaitSubmitted = false
        guard coalescing, mayWait, !windowTimerArmed, !isClosed else { return false }
        windowTimerArmed = true
        return true
    }

    /// Stops waiting for the window (after GOAWAY, failure or close, requests must not wait).
    /// - Returns: true when a drain task must be queued for what is in the inbox.
    mutating func drainSoon() -> Bool {
        windowTimerArmed = false
        guard !drainQueued, !submissions.isEmpty || !cancellations.isEmpty else { return false }
        drainQueued = true
        return true
    }

    /// From now on new requests fail with `error`. A first rejection stays, unless `error` is a
    /// failure (not a plain close), which replaces it.
    mutating func reject(_ error: HTTP2Error, replacingUnlessClosed: Bool = false) {
        if rejection == nil || (replacingUnlessClosed && error.code != .connectionClosed) {
            rejection = error
        }
    }

    var hasSubmissions: Bool { !submissions.isEmpty }
}
