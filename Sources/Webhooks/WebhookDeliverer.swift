public import Foundation
public import HeraldCore
public import Jobs

/// The `webhook.deliver` job: POSTs one webhook's due events in batches of up to
/// ``WebhookConfiguration/batchSize`` as `{"events": [...]}`, signed with `Herald-Signature`.
///
/// A 2xx answer deletes the batch's events; anything else (or no answer) reschedules them with
/// exponential backoff and jitter, up to ``WebhookConfiguration/retryWindow`` after each event's
/// first attempt, after which they are dead. The job postpones itself until the webhook's next
/// event is due and ends when none is pending. Safe to run twice at once: a batch's claim pushes
/// its events' due time on, so two jobs never send the same events concurrently.
public final class WebhookDeliverer: Sendable {
    public let store: WebhookStore
    public let configuration: WebhookConfiguration
    private let client: WebhookHTTPClient
    let metrics: WebhookMetrics
    let logger: Logger

    /// - Throws: when ``WebhookConfiguration/caFile`` cannot be read as PEM certificates.
    public init(
        store: WebhookStore,
        configuration: WebhookConfiguration = WebhookConfiguration(),
        metrics: MetricsRegistry = .shared,
        logger: Logger = Logger(label: "herald.webhooks")
    ) throws {
        self.store = store
        self.configuration = configuration
        self.client = try WebhookHTTPClient(configuration: configuration)
        self.metrics = WebhookMetrics(registry: metrics)
        self.logger = logger
    }

    /// Registers the `webhook.deliver` handler. Its failures are database errors (delivery
    /// failures are the events' own retries), retried by the job.
    public func register(on handlers: inout JobHandlers) {
        handlers.register(
            WebhookJobKind.deliver,
            options: JobKindOptions(maxAttempts: 20, retryBase: 1, retryMaximum: 300)
        ) { [self] job in
            try await run(job)
        }
    }

    /// Closes the receiver connections and stops the delivery thread (at shutdown).
    public func close() async {
        await client.close()
    }

    static func payload(for webhook: UUID) -> String {
        "{\"webhook_id\":\"\(RequestIdentifier.lowercaseString(webhook))\"}"
    }

    static func webhookID(inPayload payload: String) -> UUID? {
        guard let text = (try? JSONValue.parse(Array(payload.utf8)))?["webhook_id"]?.stringValue else { return nil }
        return RequestIdentifier.uuid(text)
    }

    /// The job's handler.
    public func run(_ job: Job) async throws -> JobOutcome {
        guard let id = Self.webhookID(inPayload: job.payload) else {
            return .failed(reason: "the job payload has no webhook_id")
        }
        try await deliverDue(id)
        guard let next = try await store.nextDue(id) else { return .done }
        return .postpone(reason: "webhook events pending", until: max(next, store.clock.now()))
    }

    /// Delivers the webhook's due events, batch after batch, until none is due or a batch fails.
    public func deliverDue(_ id: UUID) async throws {
        // A claimed batch stays out of other jobs' way for the whole request, and then some.
        let lease = (configuration.connectTimeout + configuration.requestTimeout).timeInterval + 30
        while !Task.isCancelled {
            let now = store.clock.now()
            guard let batch = try await store.claimBatch(id, limit: configuration.batchSize, lease: lease, at: now),
                !batch.events.isEmpty
            else { return }
            guard try await deliver(batch) else { return }
        }
    }

    /// POSTs one batch and records the outcome; true when the receiver took it.
    private func deliver(_ batch: WebhookStore.Batch) async throws -> Bool {
        let webhook = batch.webhook
        let body = Array(("{\"events\":[" + batch.events.map(\.json).joined(separator: ",") + "]}").utf8)
        var failure: String
        var refused: WebhookAddressRange?
        if WebhookTarget(url: webhook.url) != nil {
            let request = WebhookHTTPRequest(
                url: webhook.url,
                headers: [
                    "Content-Type: application/json",
                    "User-Agent: \(configuration.userAgent)",
                    "\(WebhookSignature.headerName): "
                        + WebhookSignature.header(secret: webhook.secret, body: body, at: store.clock.now()),
                ],
                body: body
            )
            do {
                let response = try await client.post(request)
                if (200..<300).contains(response.status) {
                    try await store.recordDelivered(webhook.id, batch.events, at: store.clock.now())
                    metrics.deliveries.increment(labels: [("result", "success")])
                    metrics.events.increment(by: Double(batch.events.count), labels: [("result", "delivered")])
                    logger.debug(
                        "webhook delivered",
                        metadata: [
                            "webhook": .string(RequestIdentifier.lowercaseString(webhook.id)),
                            "events": .int(batch.events.count),
                            "http_version": .int(response.httpVersion),
                        ]
                    )
                    return true
                }
                if (300..<400).contains(response.status) {
                    failure =
                        "the receiver answered HTTP \(response.status), a redirect: Herald does not follow "
                        + "redirects; set the webhook's url to the address the receiver redirects to"
                } else {
                    failure = "the receiver answered HTTP \(response.status)"
                }
            } catch is CancellationError {
                throw CancellationError()
            } catch let error as WebhookDeliveryError {
                failure = error.description
                refused = error.refusedRange
            } catch {
                failure = "\(error)"
            }
        } else {
            failure = "the webhook's URL can no longer be parsed"
        }
        try await recordFailure(batch, failure, deadNow: refused != nil)
        if refused != nil { metrics.destinationsRefused.increment(labels: [("stage", "delivery")]) }
        return false
    }

    /// Records a failed batch: retried later, or dead when its window has passed or `deadNow`
    /// (a refused destination, which no retry can change).
    private func recordFailure(_ batch: WebhookStore.Batch, _ failure: String, deadNow: Bool) async throws {
        let now = store.clock.now()
        let attempt = batch.events.map(\.attempts).min() ?? 1
        let backoff = Backoff(
            initial: Duration(timeInterval: configuration.retryBase),
            maximum: Duration(timeInterval: configuration.retryMaximum),
            jitter: .equal
        )
        let retryAt = now.addingTimeInterval(backoff.delay(afterAttempt: attempt).timeInterval)
        let dead = try await store.recordFailed(
            batch.webhook.id,
            batch.events,
            error: String(failure.prefix(500)),
            retryAt: retryAt,
            window: deadNow ? 0 : configuration.retryWindow,
            deadRetention: configuration.deadRetention,
            at: now
        )
        metrics.deliveries.increment(labels: [("result", "failure")])
        if dead > 0 { metrics.events.increment(by: Double(dead), labels: [("result", "dead")]) }
        logger.warning(
            "webhook delivery failed",
            metadata: [
                "webhook": .string(RequestIdentifier.lowercaseString(batch.webhook.id)),
                "events": .int(batch.events.count),
                "attempt": .int(attempt), "error": .string(String(failure.prefix(300))), "dead": .int(dead),
                "retry_at": .string(RFC3339.string(from: retryAt)),
            ]
        )
    }
}
