public import APNs
import Foundation
public import HTTPRouting
public import HeraldCore
public import HeraldFeature
import Synchronization

/// The Mastodon WebPush → APNs relay (RELAY.md): the `/push/{device_token}/{id}` route, and the
/// service whose `run()` lasts until shutdown, when it waits for the accepted pushes' answers.
///
/// A push is translated (``WebPushTranslation``) and handed to the APNs client of its
/// environment; it is answered 202 as soon as the client takes it, and APNs' answer is only
/// logged and counted. The client's ``APNs/APNSSendBudget`` decides what waits: beyond its
/// ``APNs/APNSSendBudget/Configuration/waitAbove`` a request waits for room (asynchronously), at
/// its ``APNs/APNSSendBudget/Configuration/limit``, or when no connection can be had, the answer
/// is 503 with `Retry-After`, so Mastodon retries instead of believing the push was delivered.
public final class RelayService: Service {
    public struct Configuration: Sendable {
        /// The app's bundle id (`TOPIC`).
        public var topic: String
        /// `Retry-After` seconds on 503.
        public var retryAfterSeconds = 10
        /// Requests per client address (HERALD_RELAY_IP_RATE_LIMIT), counted on the headers before
        /// anything else; beyond it 429 `rate_limited` with `Retry-After`. `nil`: no limit.
        public var addressRateLimit: RateLimit?

        public init(topic: String) {
            self.topic = topic
        }
    }

    public let configuration: Configuration
    /// The APNs client of each environment the relay serves.
    let clients: [APNSEnvironment: APNSClient]
    /// The budgets of `clients`, each once.
    private let budgets: [APNSSendBudget]
    let translation: WebPushTranslation
    let logger: Logger
    /// WebPush TTLs count from its time of day.
    let clock: any HeraldClock
    /// Set by ``triggerGracefulShutdown()``: new pushes get 503.
    let stopping = Atomic(false)
    /// Finished by ``triggerGracefulShutdown()``: `run()` then drains.
    private let shutdownRequested = AsyncStream.makeStream(of: Void.self)

    let relayRequests: Counter
    /// `relayRequests` for the answer nearly every request gets, found once.
    let accepted: (aes128gcm: LabelledCounter, aesgcm: LabelledCounter)
    let apnsResponses: Counter
    /// `apnsResponses` for a push APNs accepted.
    let apnsSuccesses: LabelledCounter
    let oversize: Counter
    /// Per-address buckets of ``Configuration/addressRateLimit``.
    let addressLimiter: RateLimiter<String>?
    let rateLimited: Counter
    /// One warning per cause (an APNs refusal reason, `transport_error`, `oversize`,
    /// `apns_unreachable`) per second: anyone who can reach the relay can cause them (a bad token,
    /// a long body), and each one still counts in the metrics.
    let refusalLog: LogRateLimiter<String>

    /// - Parameters:
    ///   - clients: the APNs client of each environment served; the relay runs their retries
    ///     (``APNs/APNSClient/run()``) in its `run()`.
    ///   - clock: the time WebPush TTLs count from, and the one-per-second limit of warnings.
    public init(
        configuration: Configuration,
        clients: [APNSEnvironment: APNSClient],
        logger: Logger = Logger(label: "herald.relay"),
        metrics: MetricsRegistry = .shared,
        clock: any HeraldClock = SystemClock()
    ) {
        self.configuration = configuration
        self.refusalLog = LogRateLimiter(interval: .seconds(1), clock: clock)
        self.clients = clients
        var budgets: [APNSSendBudget] = []
        for client in clients.values where !budgets.contains(where: { $0 === client.budget }) {
            budgets.append(client.budget)
        }
        self.budgets = budgets
        self.translation = WebPushTranslation(topic: configuration.topic)
        self.logger = logger
        self.clock = clock
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
        addressLimiter = configuration.addressRateLimit.map { RateLimiter($0, clock: clock) }
        rateLimited = metrics.counter(
            "herald_relay_rate_limited_total",
            help: "Relay requests refused with 429: their address went past HERALD_RELAY_IP_RATE_LIMIT."
        )
        // Read from the budgets when scraped: no second shared counter to update per push.
        metrics.gauge("herald_relay_in_flight", help: "Relayed pushes waiting for APNs' answer.") {
            [budgets] in Double(budgets.reduce(0) { $0 + $1.waiting })
        }
    }

    /// `POST /push/{device_token}/{id}`, and the other methods on it answering 404 (RELAY.md,
    /// Routes): raw routes (``HeraldFeature/FeatureRoute/raw(_:_:maxBodySize:admission:answering:)``),
    /// added to the router as they are, as ``Relay/feature`` declares them.
    ///
    /// The POST answers on the HTTP server's I/O thread whenever it can decide at once (bad
    /// input, or a push handed to a live APNs connection with room in the queue); a push that
    /// must wait for room waits as a callback in the budget, its connection suspended, no task;
    /// only a push that must wait for a connection takes a task (``relay(_:answer:)``).
    public var routes: [FeatureRoute] {
        let pattern = "/push/{token}/{id}"
        // A body WebPush forbids is refused on its Content-Length, before it is read; with
        // HERALD_RELAY_IP_RATE_LIMIT, each request (any method) is counted on its headers first.
        var post = FeatureRoute.raw(
            "POST",
            pattern,
            maxBodySize: WebPushTranslation.maxBodySize,
            admission: addressAdmission,
            answering: { [self] request, answer in relay(request, answer: answer) }
        )
        // The access log shows the device token shortened, as the relay's own log lines do
        // (RELAY.md): the full token in every request line would make it a list of every
        // subscribed device. The rule covers every method on the pattern.
        post.loggedPath = Self.loggedPath
        var routes = [post]
        for method in ["GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS"] {
            routes.append(
                .raw(method, pattern) { _, answer in
                    answer(
                        .error(
                            status: 404,
                            code: "not_found",
                            message: "the relay accepts only POST /push/{device_token}/{id}"
                        )
                    )
                }
            )
        }
        return routes
    }

    /// Adds ``routes`` to `router` as ``HeraldFeature/FeatureAssembly`` does: for a test or a tool
    /// that serves the relay without the feature list.
    public func register(on router: inout Router) {
        do {
            try router.register(routes, machinery: RequestMachinery())
        } catch {
            // The relay's routes need no authenticator and are declared once each.
            preconditionFailure("the relay's routes cannot be registered: \(error)")
        }
    }

    /// The per-address limit (HERALD_RELAY_IP_RATE_LIMIT), checked on the headers before the body
    /// is read; `nil` without one.
    private var addressAdmission: Router.AdmissionCheck? {
        guard let addressLimiter else { return nil }
        return { [rateLimited] request in
            guard case .refused(let seconds) = addressLimiter.take(ClientAddress.rateLimitKey(request.remoteAddress))
            else { return nil }
            rateLimited.increment()
            return .rateLimited(
                retryAfter: seconds,
                message: "too many relay requests from this address (HERALD_RELAY_IP_RATE_LIMIT "
                    + "\(addressLimiter.limit)): retry after \(seconds) s"
            )
        }
    }

    /// A relay path as the access log shows it: `/push/` + the token shortened + the rest.
    @Sendable static func loggedPath(_ request: HTTPRequest) -> String {
        // The access log's request has no parameters: cut the raw path, "/push/" + token + rest.
        let raw = request.rawPath
        if raw.utf8.starts(with: "/push/".utf8) {
            let tokenStart = raw.utf8.index(raw.utf8.startIndex, offsetBy: 6)
            if let slash = raw.utf8[tokenStart...].firstIndex(of: UInt8(ascii: "/")) {
                return "/push/" + APNSDeviceToken.shortened(String(raw[tokenStart..<slash])) + raw[slash...]
            }
        }
        let (token, id) = rawSegments(request)
        return "/push/\(APNSDeviceToken.shortened(token))/\(id)"
    }

    // MARK: Service

    /// Runs the clients' retries of relayed pushes; after graceful shutdown, returns once every
    /// accepted push has APNs' answer; when cancelled (the shutdown grace period ran out), at
    /// once, logging how many pushes were still waiting.
    public func run() async throws {
        let clients = Array(clients.values)
        await withDiscardingTaskGroup { group in
            for client in clients {
                group.addTask { await client.run() }
            }
            // Ends when shutdown is asked for, or when this task is cancelled.
            for await _ in shutdownRequested.stream {}
            for budget in budgets {
                // Returns at once when cancelled.
                await budget.waitUntilEmpty()
            }
            group.cancelAll()
        }
        triggerGracefulShutdown()
        let waiting = budgets.reduce(0) { $0 + $1.waiting }
        if waiting > 0 {
            logger.warning("relay stopped before APNs answered every push", metadata: ["pushes": .int(waiting)])
        }
    }

    /// Stops taking pushes; `run()` returns once the accepted ones have APNs' answer.
    public func triggerGracefulShutdown() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        // Requests waiting for room go on, find the relay stopping and answer 503.
        for budget in budgets { budget.close() }
        shutdownRequested.continuation.finish()
    }

    /// Logs and counts APNs' answer to a relayed push. Every answer is counted; warnings are
    /// limited to one per reason per second, each carrying how many of that reason were not
    /// logged since the last one (`suppressed`).
    func record(_ result: Result<APNSSendResult, any Error>, token: String, environment: APNSEnvironment) {
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
