import APNs
import HTTP2
import HeraldCore

/// What the pool reads of a connection: ``HTTP2/HTTP2ClientConnection`` in production, a value
/// the test sets in the state machine's table tests.
protocol PooledConnection: AnyObject, Sendable {
    /// The peer's stream limit while the connection takes requests, else nil (one atomic read).
    var usableStreamLimit: Int? { get }
    var status: HTTP2ClientConnection.Status { get }
}

extension HTTP2ClientConnection: PooledConnection {}

/// The bookkeeping of an ``APNSConnectionPool``, kept in a `Mutex`: which connections exist, how
/// many of the pool's requests each carries, the connect in progress and the backoff. Methods
/// decide and return what to do; the pool does it (connect, close, log) after unlocking.
///
/// Reading a connection's ``PooledConnection/status`` takes that connection's own
/// lock, inside this one; the connection never calls back into the pool, so the order is fixed.
struct ConnectionPoolState<Connection: PooledConnection> {
    enum Phase {
        case running, shuttingDown, shutDown
    }

    struct Entry {
        let id: Int
        let connection: Connection
        /// The pool's requests on this connection (sent or waiting for a stream).
        var inFlight = 0
        /// Responses received.
        var served = 0
        /// Set when the connection should take no more requests; it is closed once `inFlight` is 0.
        var retiredBecause: String?
    }

    /// What a send should do next.
    enum Acquisition {
        /// Send on this connection (its `inFlight` already counts the request); call
        /// ``release(_:outcome:effects:)`` afterwards.
        case use(id: Int, connection: Connection)
        /// Open a connection, then call ``connectFinished(_:result:effects:)`` and ask again.
        case connect(ConnectAttempt)
        /// Wait for another send's connect, then ask again.
        case wait(ConnectAttempt)
        /// Fail the send with this error.
        case fail(APNSConnectionPoolError)
    }

    /// How a request on a connection ended.
    enum Outcome {
        case response(status: Int, body: [UInt8])
        /// No response; `final` when the send gives up (rather than trying another connection).
        case failure(HTTP2Error?, final: Bool)
    }

    /// Things to log and do after unlocking.
    struct Effects {
        var isEmpty: Bool { close.isEmpty && events.isEmpty && statusCounts.isEmpty }

        enum Event {
            case connected(id: Int, open: Int)
            case connectFailed(APNSConnectionPoolError, consecutiveFailures: Int)
            case retired(id: Int, reason: String, served: Int)
        }

        var close: [Connection] = []
        var events: [Event] = []
        /// Response counts by status (-1: no response) to add to the metrics.
        var statusCounts: [Int: Int] = [:]
    }

    let endpoint: APNSEndpoint
    let maxConnections: Int
    /// Full-jitter exponential waits between failed connects (only its backoff math is used).
    let backoff: APNSRetryPolicy
    private let connections: Gauge
    private let connectionLabels: MetricLabels
    private var random: any RandomNumberGenerator & Sendable
    /// The pool clock's monotonic reading (``HeraldCore/HeraldClock/uptime()``); read only where
    /// backoff matters.
    private let now: @Sendable () -> Duration

    private(set) var phase = Phase.running
    private(set) var entries: [Entry] = []
    private var nextID = 1
    private(set) var connecting: ConnectAttempt?
    private(set) var consecutiveFailures = 0
    /// When the next connect may start (a reading of `now`).
    private var retryAt: Duration?
    private var lastFailure: (reason: String, error: (any Error)?)?
    /// The pool's requests on all connections.
    private(set) var inFlight = 0
    /// Sends and warm-ups inside the pool; shutdown waits for them.
    private(set) var activeCalls = 0
    private var drainWaiters: [CheckedContinuation<Void, Never>] = []
    /// Retired connections a path that cannot await left for the next one that can.
    private var deferredCloses: [Connection] = []
    private var pendingStatusCounts: [Int: Int] = [:]
    private var pendingStatusTotal = 0

    /// Response counts are added to the metrics in batches of this many (and whenever the pool
    /// goes idle), so that a busy pool does not take the registry's lock per request.
    private static var metricsBatch: Int { 256 }

    init(
        endpoint: APNSEndpoint,
        maxConnections: Int,
        backoff: APNSRetryPolicy,
        random: any RandomNumberGenerator & Sendable,
        now: @escaping @Sendable () -> Duration,
        connections: Gauge
    ) {
        self.now = now
        self.endpoint = endpoint
        self.maxConnections = max(1, maxConnections)
        self.backoff = backoff
        self.random = random
        self.connections = connections
        self.connectionLabels = [("endpoint", endpoint.description)]
    }

    // MARK: Calls

    /// Counts a send or warm-up in; false once shutdown has begun.
    mutating func enter() -> Bool {
        guard phase == .running else { return false }
        activeCalls += 1
        return true
    }

    /// Counts a call out; returns the shutdown waiters to resume when it was the last.
    mutating func leave() -> [CheckedContinuation<Void, Never>] {
        activeCalls -= 1
        guard activeCalls == 0, phase != .running, !drainWaiters.isEmpty else { return [] }
        defer { drainWaiters = [] }
        return drainWaiters
    }

    /// Starts shutting down; true when calls are still inside (then add a drain waiter).
    mutating func beginShutdown() -> Bool {
        if phase == .running { phase = .shuttingDown }
        return activeCalls > 0
    }

    mutating func addDrainWaiter(_ waiter: CheckedContinuation<Void, Never>) -> Bool {
        guard activeCalls > 0 else { return false }
        drainWaiters.append(waiter)
        return true
    }

    /// Forgets every connection (for closing) once no call is inside.
    mutating func finishShutdown() -> [Connection] {
        phase = .shutDown
        let all = entries.map(\.connection) + takeDeferredCloses()
        entries = []
        connections.set(0, labels: connectionLabels)
        return all
    }

    var hasDeferredCloses: Bool { !deferredCloses.isEmpty }

    /// Keeps retired connections for the next call that can close them.
    mutating func deferClose(_ connections: [Connection]) {
        deferredCloses += connections
    }

    mutating func takeDeferredCloses() -> [Connection] {
        defer { deferredCloses = [] }
        return deferredCloses
    }

    // MARK: Choosing a connection

    /// Picks a connection for one request: the least loaded one with a free stream; else a new
    /// connection when every connection has answered at least once (a fresh APNs connection allows
    /// one stream until its first success), fewer than `maxConnections` are open, no connect is in
    /// progress and the pool is not backing off; else the least loaded one (the request waits there
    /// for a stream); else the connect in progress; else an error.
    ///
    /// - Parameter mayConnect: false once a connect this send waited for failed (or after several).
    mutating func acquire(mayConnect: Bool, effects: inout Effects) -> Acquisition {
        var best: (id: Int, load: Int)?
        var leastLoaded: (id: Int, load: Int)?
        var live = 0
        var anyWarming = false
        var anyRetiredIdle = false
        for index in entries.indices {
            if entries[index].retiredBecause != nil {
                anyRetiredIdle = anyRetiredIdle || entries[index].inFlight == 0
                continue
            }
            // The usable stream limit is an atomic read; the full status (a lock and a copy) only
            // when the connection is not usable any more and the reason is wanted.
            guard let streamLimit = entries[index].connection.usableStreamLimit else {
                retire(
                    index,
                    because: Self.reason(entries[index].connection.status),
                    refusedRequests: entries[index].inFlight > 0,
                    effects: &effects
                )
                anyRetiredIdle = anyRetiredIdle || entries[index].inFlight == 0
                continue
            }
            live += 1
            let (id, load, served) = (entries[index].id, entries[index].inFlight, entries[index].served)
            if served == 0 { anyWarming = true }
            if leastLoaded == nil || load < leastLoaded!.load {
                leastLoaded = (id, load)
            }
            if load < streamLimit, best == nil || load < best!.load {
                best = (id, load)
            }
        }
        if anyRetiredIdle { removeRetiredIdle(effects: &effects) }

        if let best { return use(best.id) }
        let backingOff = retryAt.map { now() < $0 } ?? false
        let canConnect = phase == .running && mayConnect && connecting == nil && !backingOff && live < maxConnections
        if canConnect, !anyWarming { return startConnect() }
        if let leastLoaded { return use(leastLoaded.id) }
        if let connecting { return .wait(connecting) }
        if phase != .running {
            return .fail(
                APNSConnectionPoolError(code: .shutDown, endpoint: endpoint, reason: "no new requests are taken")
            )
        }
        if canConnect { return startConnect() }
        return .fail(unreachable())
    }

    private mutating func use(_ id: Int) -> Acquisition {
        let index = entries.firstIndex { $0.id == id }!
        entries[index].inFlight += 1
        inFlight += 1
        return .use(id: id, connection: entries[index].connection)
    }

    private mutating func startConnect() -> Acquisition {
        let attempt = ConnectAttempt()
        connecting = attempt
        return .connect(attempt)
    }

    /// A warm-up's next step: connect while fewer than `target` connections are usable.
    mutating func warmUpStep(target: Int, effects: inout Effects) -> Acquisition? {
        var live = 0
        for index in entries.indices where entries[index].retiredBecause == nil {
            let status = entries[index].connection.status
            if status.isUsable {
                live += 1
            } else {
                retire(
                    index,
                    because: Self.reason(status),
                    refusedRequests: entries[index].inFlight > 0,
                    effects: &effects
                )
            }
        }
        removeRetiredIdle(effects: &effects)
        if live >= min(target, maxConnections) { return nil }
        if let connecting { return .wait(connecting) }
        if phase != .running {
            return .fail(
                APNSConnectionPoolError(code: .shutDown, endpoint: endpoint, reason: "no new connections are opened")
            )
        }
        if let retryAt, now() < retryAt { return .fail(unreachable()) }
        return startConnect()
    }

    // MARK: Results

    /// Records the end of a request on connection `id`.
    mutating func release(_ id: Int, outcome: Outcome, effects: inout Effects) {
        guard let index = entries.firstIndex(where: { $0.id == id }) else { return }
        entries[index].inFlight -= 1
        inFlight -= 1
        switch outcome {
        case .response(let status, let body):
            entries[index].served += 1
            if consecutiveFailures > 0 {
                consecutiveFailures = 0
                retryAt = nil
                lastFailure = nil
            }
            count(status)
            if status == 503, entries[index].retiredBecause == nil {
                // Apple asks that a request refused with 503 be retried on another connection.
                let reason = APNSErrorBody(parsing: body).reason.map { "\($0)" } ?? "no reason"
                retire(index, because: "HTTP 503 (\(reason))", refusedRequests: false, effects: &effects)
            }
        case .failure(let error, let final):
            if final { count(-1) }
            if entries[index].retiredBecause == nil {
                // The connection's status is a snapshot published after its loop's events; the
                // error may arrive first, so an error about the connection retires it by itself.
                let status = entries[index].connection.status
                if let error, Self.isConnectionError(error) {
                    let reason = status.isUsable ? Self.reason(error) : Self.reason(status)
                    retire(index, because: reason, refusedRequests: true, effects: &effects)
                } else if !status.isUsable {
                    retire(index, because: Self.reason(status), refusedRequests: true, effects: &effects)
                }
            }
        }
        if entries[index].retiredBecause != nil, entries[index].inFlight == 0 {
            removeRetiredIdle(effects: &effects)
        }
        if pendingStatusTotal >= Self.metricsBatch || (inFlight == 0 && pendingStatusTotal > 0) {
            effects.statusCounts = pendingStatusCounts
            pendingStatusCounts = [:]
            pendingStatusTotal = 0
        }
    }

    /// Records the end of a connect started by ``acquire(mayConnect:effects:)``.
    mutating func connectFinished(
        _ attempt: ConnectAttempt,
        result: Result<Connection, any Error>,
        effects: inout Effects
    ) -> ConnectAttempt.Outcome {
        if connecting === attempt { connecting = nil }
        switch result {
        case .success(let connection):
            let id = nextID
            nextID += 1
            entries.append(Entry(id: id, connection: connection))
            // The failure count is reset by the first response, not here: a connection that APNs
            // closes before answering (see `retire`) counts as one more failure.
            retryAt = nil
            connections.set(Double(entries.count), labels: connectionLabels)
            effects.events.append(.connected(id: id, open: entries.count))
            return .connected
        case .failure(let error) where error is CancellationError:
            return .cancelled
        case .failure(let error):
            recordConnectFailure(Self.describe(error), error: error, effects: &effects)
            return .failed(unreachable())
        }
    }

    // MARK: Availability

    /// Not shut down, and: a usable connection exists, or no connect has failed since the last
    /// success, or the backoff has passed (the next send will try again).
    func isAvailable() -> Bool {
        guard phase == .running else { return false }
        if entries.contains(where: { $0.retiredBecause == nil && $0.connection.status.isUsable }) { return true }
        guard consecutiveFailures > 0, let retryAt else { return true }
        return now() >= retryAt
    }

    /// Running, with a connection that takes requests.
    var hasUsableConnection: Bool {
        phase == .running && entries.contains { $0.retiredBecause == nil && $0.connection.usableStreamLimit != nil }
    }

    func status() -> APNSConnectionPool.Status {
        var status = APNSConnectionPool.Status()
        status.openConnections = entries.count
        status.usableConnections = entries.count {
            $0.retiredBecause == nil && $0.connection.status.isUsable
        }
        status.requestsInFlight = inFlight
        status.consecutiveConnectFailures = consecutiveFailures
        let current = now()
        if consecutiveFailures > 0, let retryAt, current < retryAt {
            status.nextConnectAttemptIn = current.duration(to: retryAt)
        }
        status.lastConnectError = lastFailure?.reason
        status.isShutDown = phase != .running
        return status
    }

    // MARK: Helpers

    private func unreachable() -> APNSConnectionPoolError {
        let current = now()
        let wait = retryAt.map { current < $0 ? current.duration(to: $0) : .zero }
        return APNSConnectionPoolError(
            code: .unreachable,
            endpoint: endpoint,
            reason: lastFailure?.reason ?? "no usable connection to \(endpoint.authority)",
            retryAfter: wait,
            underlying: lastFailure?.error
        )
    }

    /// Takes connection `index` out of use. One that goes away with requests on it before
    /// answering any (APNs refusing the certificate or the environment: GOAWAY, then close) counts
    /// as a failed connect, so that the pool backs off instead of reconnecting for every request.
    /// An idle connection closing (a warm-up connection APNs dropped) does not.
    private mutating func retire(
        _ index: Int,
        because reason: String,
        refusedRequests: Bool,
        effects: inout Effects
    ) {
        entries[index].retiredBecause = reason
        effects.events.append(.retired(id: entries[index].id, reason: reason, served: entries[index].served))
        if refusedRequests, entries[index].served == 0 {
            recordConnectFailure(
                "the connection to \(endpoint.authority) closed before any response: \(reason)",
                error: nil,
                effects: &effects
            )
        }
    }

    private mutating func recordConnectFailure(
        _ reason: String,
        error: (any Error)?,
        effects: inout Effects
    ) {
        consecutiveFailures += 1
        let delay = backoff.backoff(afterAttempt: consecutiveFailures, using: &random)
        retryAt = now() + delay
        lastFailure = (reason, error)
        effects.events.append(.connectFailed(unreachable(), consecutiveFailures: consecutiveFailures))
    }

    private mutating func removeRetiredIdle(effects: inout Effects) {
        let before = entries.count
        entries.removeAll { entry in
            guard entry.retiredBecause != nil, entry.inFlight == 0 else { return false }
            effects.close.append(entry.connection)
            return true
        }
        if entries.count != before { connections.set(Double(entries.count), labels: connectionLabels) }
    }

    private mutating func count(_ status: Int) {
        pendingStatusCounts[status, default: 0] += 1
        pendingStatusTotal += 1
    }

    /// Why a connection stopped being usable: the GOAWAY (with APNs' reason), else the failure.
    static func reason(_ status: HTTP2ClientConnection.Status) -> String {
        if let goAway = status.goAway {
            return "GOAWAY \(goAway.reason ?? goAway.errorCode.description)"
        }
        if let failure = status.failure { return failure.message }
        return status.isClosed ? "closed" : "closing"
    }

    /// Whether `error` means the whole connection takes no more requests (rather than one stream
    /// failing).
    static func isConnectionError(_ error: HTTP2Error) -> Bool {
        switch error.code {
        case .streamRefused, .streamReset, .requestTimeout, .responseTooLarge: false
        default: true
        }
    }

    static func reason(_ error: HTTP2Error) -> String {
        if let goAway = error.goAway {
            return "GOAWAY \(goAway.reason ?? goAway.errorCode.description)"
        }
        return error.message
    }

    /// A connect error in one sentence: the HTTP/2 message names the host and the cause.
    static func describe(_ error: any Error) -> String {
        if let error = error as? HTTP2Error { return error.message }
        return "\(error)"
    }
}

extension Duration {
    /// `other - self`, for instants kept as durations since an origin.
    fileprivate func duration(to other: Duration) -> Duration { other - self }
}
