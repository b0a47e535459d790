public import APNs
import Dispatch
public import Foundation
public import HTTPRouting
public import HeraldCore
import Synchronization

/// The Mastodon WebPush → APNs relay (RELAY.md): the `/push/{device_token}/{id}` route, and the
/// service whose `run()` lasts until shutdown, when it waits for the accepted pushes' answers.
///
/// A push is answered 202 as soon as it is handed to a live APNs connection; APNs' answer is only
/// logged and counted. When no connection can be had for the environment, the answer is 503 with
/// `Retry-After`, so Mastodon retries instead of believing the push was delivered.
public final class RelayService: Service {
    public struct Configuration: Sendable {
        /// The app's bundle id (`TOPIC`).
        public var topic: String
        /// Pushes accepted but not yet answered by APNs; beyond it new ones get 503.
        public var maxInFlight = 10_000
        /// `Retry-After` seconds on 503.
        public var retryAfterSeconds = 10
        /// Pushes waiting for APNs beyond which a relay request waits for one of them to finish
        /// before it is accepted (202). Each waiting push holds about 2.5 KB (its stream, header
        /// block, payload and request), so this bounds memory when senders outpace APNs to about
        /// 10 MB, by slowing them down rather than refusing them. The bound sits well above the
        /// backlog that scheduling hiccups build on a busy machine.
        public var maxQueuedBeforeWaiting = 4_096
        /// How long an HTTP thread may pause, reading no new requests, when a relay request finds
        /// ``maxQueuedBeforeWaiting`` pushes waiting. It goes on once APNs has answered a batch
        /// of them (1/64 of the bound), and accepts the next requests at once; when fewer came
        /// in the whole pause (APNs is slow), it goes on with whatever room they made. A request
        /// still without room after the pause waits in a task, with its connection suspended, which
        /// is far more work per request (docs/PERFORMANCE.md). When APNs answered nothing during a
        /// pause, threads do not pause for the next 100 ms, so that a stalled APNs connection
        /// holds up the thread's other requests (health checks, the other environment) for at most
        /// one pause in a while. Zero never pauses.
        public var maximumPause: Duration = .milliseconds(20)
        public init(topic: String) {
            self.topic = topic
        }
    }

    /// One environment's way to APNs. A class: every relayed push looks its route up, and a
    /// class is passed on with one retain instead of one per field of the client.
    public final class Route: Sendable {
        public let pool: APNSConnectionPool
        public let client: APNSClient

        public init(pool: APNSConnectionPool, client: APNSClient) {
            self.pool = pool
            self.client = client
        }
    }

    public let configuration: Configuration
    private let routes: [APNSEnvironment: Route]
    private let translation: WebPushTranslation
    private let logger: Logger
    private let now: @Sendable () -> Date
    /// Pushes accepted and not yet answered by APNs (`inFlight.count`), and relay requests
    /// waiting for room (`inFlight.waiters`, ``Configuration/maxQueuedBeforeWaiting``).
    private let inFlight = InFlightPushes()
    /// Set by ``triggerGracefulShutdown()``: new pushes get 503.
    private let stopping = Atomic(false)
    /// `run()` waiting for the shutdown to be asked for and the accepted pushes to finish.
    private let drain = Mutex(Drain())
    /// Per environment, when its pool was last seen with a live connection.
    private let liveness: [APNSEnvironment: Liveness]
    /// Where HTTP threads pause while the queue is full (``Configuration/maximumPause``).
    private let gate: RoomGate
    /// Pushes in flight below which paused HTTP threads go on: a batch below the bound, so that a
    /// thread woken up accepts a batch of requests before it pauses again.
    private let reopenBelow: Int

    private let relayRequests: Counter
    /// `relayRequests` for the answer nearly every request gets, found once.
    private let accepted: (aes128gcm: LabelledCounter, aesgcm: LabelledCounter)
    private let apnsResponses: Counter
    /// `apnsResponses` for a push APNs accepted.
    private let apnsSuccesses: LabelledCounter
    private let oversize: Counter
    private let pauses: Counter
    /// One warning per cause (an APNs refusal reason, `transport_error`, `oversize`,
    /// `apns_unreachable`) per second: anyone who can reach the relay can cause them (a bad token,
    /// a long body), and each one still counts in the metrics.
    private let refusalLog: LogRateLimiter<String>

    public init(
        configuration: Configuration,
        routes: [APNSEnvironment: Route],
        logger: Logger = Logger(label: "herald.relay"),
        metrics: MetricsRegistry = .shared,
        now: @escaping @Sendable () -> Date = { Date() },
        logClock: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) {
        self.configuration = configuration
        self.refusalLog = LogRateLimiter(interval: .seconds(1), now: logClock)
        self.routes = routes
        self.liveness = routes.mapValues { _ in Liveness() }
        self.gate = RoomGate(maximumPause: configuration.maximumPause, holdOff: .milliseconds(100))
        self.reopenBelow = configuration.maxQueuedBeforeWaiting - configuration.maxQueuedBeforeWaiting / 64
        self.translation = WebPushTranslation(topic: configuration.topic)
        self.logger = logger
        self.now = now
        relayRequests = metrics.counter(
            "herald_relay_requests_total",
            help: "Relay requests answered, by content encoding and HTTP status."
        )
        apnsResponses = metrics.counter(
            "herald_relay_apns_responses_total",
            help: "APNs answers to relayed pushes, by reason (success for 200)."
        )
        accepted = (
            relayRequests.labelled([("encoding", "aes128gcm"), ("status", "202")]),
            relayRequests.labelled([("encoding", "aesgcm"), ("status", "202")])
        )
        apnsSuccesses = apnsResponses.labelled([("reason", "success")])
        oversize = metrics.counter(
            "herald_relay_oversize_total",
            help: "Relayed bodies accepted with 202 but not sent: the APNs payload would exceed 4096 bytes."
        )
        pauses = metrics.counter(
            "herald_relay_pauses_total",
            help: "Relay requests that found the queue full, by what their HTTP thread did: paused until there "
                + "was room (room), paused in vain (timeout), or did not pause because a pause had just found "
                + "APNs stalled (held_off); the last two wait in a task."
        )
        // Read from `inFlight` when scraped: no second shared counter to update per push. The
        // reading holds the count, not the service: a weak reference would give the service a
        // side table, and every retain of it, several per push, would take the slow path.
        metrics.gauge("herald_relay_in_flight", help: "Relayed pushes waiting for APNs' answer.") {
            [inFlight] in inFlight.reading
        }
    }

    deinit {
        inFlight.retire()
    }

    /// Adds `POST /push/{device_token}/{id}`; other methods on it answer 404 (RELAY.md, Routes).
    ///
    /// The route answers on the HTTP server's I/O thread whenever it can decide at once (bad
    /// input, or a push handed to a live APNs connection with room in the queue), and takes the
    /// asynchronous path only when it must wait: for a connection, or for room.
    public func register(on router: inout Router) {
        // A body WebPush forbids is refused on its Content-Length, before it is read.
        router.on(
            "POST",
            "/push/{token}/{id}",
            maxBodySize: WebPushTranslation.maxBodySize,
            immediately: { [self] request in relayImmediately(request) },
            otherwise: { [self] request in await relay(request) }
        )
        for method in ["GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS"] {
            router.on(method, "/push/{token}/{id}") { _ in
                .error(status: 404, code: "not_found", message: "the relay accepts only POST /push/{device_token}/{id}")
            }
        }
        // The access log shows the device token shortened, as the relay's own log lines do
        // (RELAY.md): the full token in every request line would make it a list of every
        // subscribed device.
        router.logPaths(of: "/push/{token}/{id}") { request in
            // The access log's request has no parameters: cut the raw path, "/push/" + token + rest.
            let raw = request.rawPath
            if raw.utf8.starts(with: "/push/".utf8) {
                let tokenStart = raw.utf8.index(raw.utf8.startIndex, offsetBy: 6)
                if let slash = raw.utf8[tokenStart...].firstIndex(of: UInt8(ascii: "/")) {
                    return "/push/" + APNSDeviceToken.shortened(String(raw[tokenStart..<slash])) + raw[slash...]
                }
            }
            let (token, id) = Self.rawSegments(request)
            return "/push/\(APNSDeviceToken.shortened(token))/\(id)"
        }
    }

    /// A relay request after validation: either its final answer, or a push to hand to APNs.
    private enum Prepared {
        case answer(HTTPResponse)
        case deliver(RelayedPush, Route)
    }

    /// Answers one relay request, waiting for an APNs connection or for room when needed.
    func relay(_ request: HTTPRequest) async -> HTTPResponse {
        let (push, route): (RelayedPush, Route)
        switch prepare(request) {
        case .answer(let response): return response
        case .deliver(let prepared, let preparedRoute): (push, route) = (prepared, preparedRoute)
        }
        do {
            try await route.pool.warmUp()
        } catch {
            count(push.encoding, status: 503)
            if let suppressed = refusalLog.admit("apns_unreachable") {
                logger.warning(
                    "relay answered 503: APNs unreachable",
                    metadata: [
                        "environment": .string("\(push.environment)"), "error": .string("\(error)"),
                        "suppressed": .int(suppressed),
                    ]
                )
            }
            return unavailable("APNs (\(push.environment)) cannot be reached right now")
        }
        await waitForRoom()
        return hand(push, on: route)
    }

    /// Answers one relay request without waiting, or returns `nil` (having changed nothing) when
    /// it would have to wait: no live APNs connection for its environment, or a queue still full
    /// after a pause of the calling thread (``Configuration/maximumPause``).
    func relayImmediately(_ request: HTTPRequest) -> HTTPResponse? {
        switch prepare(request) {
        case .answer(let response):
            return response
        case .deliver(let push, let route):
            guard hasLiveConnection(route, push.environment) else { return nil }
            if inFlight.count.load(ordering: .relaxed) >= configuration.maxQueuedBeforeWaiting {
                let outcome = gate.pause(
                    until: { [self] in
                        stopping.load(ordering: .sequentiallyConsistent)
                            || inFlight.count.load(ordering: .sequentiallyConsistent) < reopenBelow
                    },
                    progress: { [inFlight] in inFlight.finished.load(ordering: .relaxed) }
                )
                switch outcome {
                case .room(paused: false): break
                case .room(paused: true), .timedOut:
                    // A pause that timed out saw fewer answers than a batch (a slow connection,
                    // not a stalled one): the push takes whatever room they made. Sending it to
                    // a task instead would let the thread accept one push per pause, far below
                    // what APNs takes.
                    let hasRoom =
                        outcome.hasRoom
                        || inFlight.count.load(ordering: .sequentiallyConsistent) < configuration.maxQueuedBeforeWaiting
                    pauses.increment(labels: [("outcome", hasRoom ? "room" : "timeout")])
                    // The room may come from a lost connection's failed pushes.
                    guard hasRoom, hasLiveConnection(route, push.environment, fresh: true) else { return nil }
                case .heldOff:
                    pauses.increment(labels: [("outcome", "held_off")])
                    return nil
                }
            }
            return hand(push, on: route)
        }
    }

    /// Whether `route`'s pool has a usable connection. The answer is reused for
    /// ``Liveness/window``: asking the pool takes its lock and builds a status for every push,
    /// while a connection can be lost at any moment anyway.
    ///
    /// `fresh` asks the pool even within the window: after a pause, in which the connection may
    /// have been lost (its failed pushes are what made the room).
    private func hasLiveConnection(_ route: Route, _ environment: APNSEnvironment, fresh: Bool = false) -> Bool {
        let liveness = liveness[environment]
        let now = DispatchTime.now().uptimeNanoseconds
        if !fresh, let seen = liveness?.seen.load(ordering: .relaxed), seen != 0, now &- seen < Liveness.window {
            return true
        }
        let status = route.pool.status
        let live = status.usableConnections > 0 && !status.isShutDown
        liveness?.seen.store(live ? now : 0, ordering: .relaxed)
        return live
    }

    /// Validates and translates; counts and answers what can be answered without APNs.
    private func prepare(_ request: HTTPRequest) -> Prepared {
        let (rawToken, rawID) = Self.rawSegments(request)
        let push: RelayedPush
        do {
            push = try translation.translate(rawToken: rawToken, rawID: rawID, request: request, now: now())
        } catch {
            count(error.encoding, status: error.status)
            return .answer(.error(status: error.status, code: error.code, message: error.message))
        }
        if push.request.payload.count > push.request.pushType.maxPayloadSize {
            // A 4xx would make Mastodon delete the subscription over one long message (RELAY.md).
            oversize.increment()
            if let suppressed = refusalLog.admit("oversize") {
                logger.warning(
                    "relay body too large for APNs: not sent",
                    metadata: [
                        "token": .string(APNSDeviceToken.shortened(push.request.deviceToken)),
                        "apns_payload_bytes": .int(push.request.payload.count),
                        "suppressed": .int(suppressed),
                    ]
                )
            }
            count(push.encoding, status: 202)
            return .answer(HTTPResponse(status: 202))
        }
        guard let route = routes[push.environment] else {
            count(push.encoding, status: 503)
            return .answer(unavailable("no APNs credentials for the \(push.environment) environment"))
        }
        return .deliver(push, route)
    }

    /// Hands `push` to the APNs client for the connection that is now live: 202, or 503 when
    /// too many pushes wait for APNs or the relay is shutting down.
    ///
    /// The push goes out from the calling thread (the HTTP server's, for immediate answers) and
    /// APNs' answer is handled on the connection's I/O thread: no task per push.
    private func hand(_ push: RelayedPush, on route: Route) -> HTTPResponse {
        // Counted before `stopping` is read (both sequentially consistent), so that `run()`,
        // which sets `stopping` before it looks at the count, cannot miss this push.
        let admitted =
            inFlight.count.wrappingAdd(1, ordering: .sequentiallyConsistent).newValue <= configuration.maxInFlight
        guard admitted, !stopping.load(ordering: .sequentiallyConsistent) else {
            // This request may have taken a waiter's turn without delivering anything: pass it on.
            release()
            count(push.encoding, status: 503)
            return admitted
                ? unavailable("the relay is shutting down") : unavailable("too many pushes are waiting for APNs")
        }
        count(push.encoding, status: 202)
        // Only what the answer's log line needs: the push itself is the client's now.
        let (token, environment) = (push.request.deviceToken, push.environment)
        route.client.submit(push.request) { [self] result in
            record(result, token: token, environment: environment)
            release()
        }
        return HTTPResponse(status: 202)
    }

    /// One push fewer in flight: lets a waiting request through, and `run()` return once
    /// shutting down with none left.
    private func release() {
        let left = inFlight.count.wrappingSubtract(1, ordering: .sequentiallyConsistent).newValue
        inFlight.finished.wrappingAdd(1, ordering: .relaxed)
        if left < reopenBelow { gate.open() }
        inFlight.waiters.withLock { $0.next() }?.resume()
        if left == 0, stopping.load(ordering: .sequentiallyConsistent) { resumeDrainedRun() }
    }

    /// Resumes `run()` if shutdown was asked for and nothing is in flight (or it gave up waiting).
    private func resumeDrainedRun() {
        let waiter = drain.withLock { drain -> CheckedContinuation<Void, Never>? in
            guard stopping.load(ordering: .sequentiallyConsistent),
                drain.abandoned || inFlight.count.load(ordering: .sequentiallyConsistent) == 0
            else {
                return nil
            }
            defer { drain.waiter = nil }
            return drain.waiter
        }
        waiter?.resume()
    }

    /// Returns once fewer than ``Configuration/maxQueuedBeforeWaiting`` pushes wait for APNs,
    /// at graceful shutdown, or on cancellation; each finished delivery lets one waiter through.
    private func waitForRoom() async {
        let limit = configuration.maxQueuedBeforeWaiting
        guard inFlight.count.load(ordering: .relaxed) >= limit else { return }
        let id = inFlight.waiters.withLock { $0.makeID() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waiting = inFlight.waiters.withLock { waiters in
                    // Checked under the lock that deliveries take after finishing: no lost wake-up.
                    guard inFlight.count.load(ordering: .relaxed) >= limit else { return false }
                    return waiters.add(id, continuation)
                }
                if !waiting { continuation.resume() }
            }
        } onCancel: {
            inFlight.waiters.withLock { $0.cancel(id) }?.resume()
        }
        inFlight.waiters.withLock { $0.forget(id) }
    }

    private func unavailable(_ message: String) -> HTTPResponse {
        var response = HTTPResponse.error(status: 503, code: "apns_unavailable", message: message + "; retry later")
        response.headers.replaceOrAdd(name: "Retry-After", value: String(configuration.retryAfterSeconds))
        return response
    }

    private func count(_ encoding: String, status: Int) {
        switch (encoding, status) {
        case ("aes128gcm", 202): accepted.aes128gcm.increment()
        case ("aesgcm", 202): accepted.aesgcm.increment()
        default: relayRequests.increment(labels: [("encoding", encoding), ("status", String(status))])
        }
    }

    /// The `device_token` and `id` path segments as received (still percent-encoded).
    private static func rawSegments(_ request: HTTPRequest) -> (token: String, id: String) {
        // Without an escape in the path, the router's decoded parameters are the raw segments.
        if !request.rawPath.utf8Contains(UInt8(ascii: "%")), let token = request.parameters["token"],
            let id = request.parameters["id"]
        {
            return (token, id)
        }
        let segments = request.rawPath.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        // ["", "push", token, id]: the router matched exactly four segments.
        guard segments.count == 4 else { return ("", "") }
        return (String(Substring(segments[2])), String(Substring(segments[3])))
    }

    // MARK: Service

    /// Returns after graceful shutdown, once every accepted push has APNs' answer; when
    /// cancelled (the shutdown grace period ran out), at once, logging how many pushes were still
    /// waiting. Pushes themselves are sent by the requests that accept them.
    public func run() async throws {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                drain.withLock { $0.waiter = continuation }
                resumeDrainedRun()
            }
        } onCancel: {
            triggerGracefulShutdown()
            drain.withLock { $0.abandoned = true }
            resumeDrainedRun()
        }
        let waiting = inFlight.count.load(ordering: .sequentiallyConsistent)
        if waiting > 0 {
            logger.warning("relay stopped before APNs answered every push", metadata: ["pushes": .int(waiting)])
        }
    }

    /// Stops taking pushes; `run()` returns once the accepted ones have APNs' answer.
    public func triggerGracefulShutdown() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        // Waiting requests go on to find the relay stopping and answer 503.
        gate.open()
        for waiter in inFlight.waiters.withLock({ $0.removeAll() }) { waiter.resume() }
        resumeDrainedRun()
    }

    /// Logs and counts APNs' answer to a relayed push. Every answer is counted; warnings are
    /// limited to one per reason per second, each carrying how many of that reason were not
    /// logged since the last one (`suppressed`).
    private func record(_ result: Result<APNSSendResult, any Error>, token: String, environment: APNSEnvironment) {
        switch result {
        case .success(.delivered):
            apnsSuccesses.increment()
        case .success(.rejected(let rejection)):
            let label = rejection.reason.metricLabel
            apnsResponses.increment(labels: [("reason", label)])
            guard let suppressed = refusalLog.admit(label) else { return }
            var metadata: [String: LogValue] = [
                "reason": .string("\(rejection.reason)"),
                "status": .int(rejection.status),
                "token": .string(APNSDeviceToken.shortened(token)),
                "environment": .string("\(environment)"),
                "suppressed": .int(suppressed),
            ]
            if let since = rejection.deviceTokenInvalidSince {
                metadata["unregistered_at"] = .string(RFC3339.string(from: since))
            }
            logger.warning("APNs refused a relayed push", metadata: metadata)
        case .failure(let error):
            apnsResponses.increment(labels: [("reason", "transport_error")])
            guard let suppressed = refusalLog.admit("transport_error") else { return }
            logger.warning(
                "relayed push not delivered",
                metadata: [
                    "token": .string(APNSDeviceToken.shortened(token)),
                    "error": .string("\(error)"),
                    "suppressed": .int(suppressed),
                ]
            )
        }
    }
}

/// `run()`'s continuation while it waits, and whether it gave up waiting for APNs.
private struct Drain {
    /// Cancelled: return without waiting for APNs' answers.
    var abandoned = false
    var waiter: CheckedContinuation<Void, Never>?
}

/// The relay's count of pushes in flight and the requests waiting for room, in an object of their
/// own: the gauge reads the count without holding the service, and their updates (per push, from
/// different threads) do not share a cache line with the fields every request reads.
private final class InFlightPushes: Sendable {
    let count = Atomic(0)
    /// Releases of `count` so far (nearly all of them APNs' answers): whether APNs progressed
    /// during a pause of an HTTP thread.
    let finished = Atomic(0)
    /// Relay requests waiting for room; every finished push also takes this lock.
    let waiters = Mutex(Waiters())
    /// Set when the service is gone: the gauge's reading is then dropped.
    private let retired = Atomic(false)

    /// The gauge's value, or `nil` once retired.
    var reading: Double? {
        retired.load(ordering: .relaxed) ? nil : Double(count.load(ordering: .relaxed))
    }

    func retire() {
        retired.store(true, ordering: .relaxed)
    }
}

/// When an environment's pool was last seen with a usable connection.
private final class Liveness: Sendable {
    /// How long a positive answer is reused, in nanoseconds: 1 ms.
    static let window: UInt64 = 1_000_000
    /// `DispatchTime` uptime in nanoseconds; 0 when not known to be live.
    let seen = Atomic<UInt64>(0)
}

/// Relay requests waiting for room, first come first served. Ids let a cancelled request take
/// its continuation back; a cancellation that arrives before its request starts waiting is
/// remembered so that the request does not wait at all.
private struct Waiters {
    private var lastID = 0
    /// Every finished push lets one through, and thousands may wait: a queue whose first
    /// element is taken without moving the rest.
    private var waiting = FIFOQueue<(id: Int, continuation: CheckedContinuation<Void, Never>)>()
    private var cancelledEarly: Set<Int> = []
    private var stopped = false

    mutating func makeID() -> Int {
        lastID += 1
        return lastID
    }

    /// `false` when the caller must not wait (cancelled already, or shutting down).
    mutating func add(_ id: Int, _ continuation: CheckedContinuation<Void, Never>) -> Bool {
        if cancelledEarly.remove(id) != nil || stopped { return false }
        waiting.append((id, continuation))
        return true
    }

    mutating func cancel(_ id: Int) -> CheckedContinuation<Void, Never>? {
        guard let waiter = waiting.remove(where: { $0.id == id }) else {
            cancelledEarly.insert(id)
            return nil
        }
        return waiter.continuation
    }

    /// Drops what a cancellation that came after the wait ended left behind.
    mutating func forget(_ id: Int) {
        cancelledEarly.remove(id)
    }

    mutating func next() -> CheckedContinuation<Void, Never>? {
        waiting.popFirst()?.continuation
    }

    mutating func removeAll() -> [CheckedContinuation<Void, Never>] {
        stopped = true
        return waiting.removeAll().map(\.continuation)
    }
}
