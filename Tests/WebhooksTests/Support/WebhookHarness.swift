import DatabaseTestSupport
import Foundation
import HTTP2
import HeraldCore
import Jobs
import JobsTestSupport
import ProcessTestSupport
import Storage
import Testing

@testable import Webhooks

let quietLogger = Logger(label: "herald.webhooks.test", level: .error, handler: RecordingLogHandler())

/// The webhooks stack as `herald serve` builds it, on a fresh database of one backend, with a
/// manual clock: tests run deliveries by hand (``WebhookDeliverer/deliverDue(_:)``) or through
/// the job.
struct WebhookHarness {
    let database: any Database
    let clock: any HeraldClock
    let store: WebhookStore
    let events: WebhookEvents
    let deliverer: WebhookDeliverer
    let queue: JobQueue
    let metrics: MetricsRegistry

    static func configuration() -> WebhookConfiguration {
        var configuration = WebhookConfiguration()
        configuration.caFile = ReceiverCertificate.shared.caFile
        configuration.allowHTTP = true
        // The receivers are on loopback.
        configuration.allowPrivate = true
        configuration.userAgent = "Herald/test"
        configuration.connectTimeout = .seconds(30)
        configuration.requestTimeout = .seconds(30)
        return configuration
    }

    static func with(
        _ backend: Backend,
        configuration: WebhookConfiguration = configuration(),
        _ body: (WebhookHarness, ManualClock) async throws -> Void
    ) async throws {
        try await withDatabase(backend, poolSize: 4) { db, _ in
            try await Migrator.migrate(db, JobMigrations.all + WebhookMigrations.all, logger: quietLogger)
            let clock = ManualClock(Date())
            let harness = try make(db, clock: clock, configuration: configuration)
            do {
                try await body(harness, clock)
            } catch {
                await harness.deliverer.close()
                throw error
            }
            await harness.deliverer.close()
        }
    }

    static func make(
        _ db: any Database,
        clock: any HeraldClock,
        configuration: WebhookConfiguration = configuration()
    ) throws -> WebhookHarness {
        let metrics = MetricsRegistry()
        let store = WebhookStore(database: db, clock: clock)
        let events = WebhookEvents(store: store, configuration: configuration, logger: quietLogger)
        let deliverer = try WebhookDeliverer(
            store: store,
            configuration: configuration,
            metrics: metrics,
            logger: quietLogger
        )
        var handlers = JobHandlers()
        deliverer.register(on: &handlers)
        let queue = JobQueue(database: db, handlers: handlers, clock: clock, metrics: metrics)
        events.attach(queue)
        return WebhookHarness(
            database: db,
            clock: clock,
            store: store,
            events: events,
            deliverer: deliverer,
            queue: queue,
            metrics: metrics
        )
    }

    func createWebhook(
        url: String,
        events: [WebhookEventType] = [.deviceInvalidated, .notificationFinished],
        secret: String? = nil
    ) async throws -> Webhook {
        try await store.create(WebhookRequest(url: url, events: events, secret: secret))
    }

    /// `count` `device.invalidated` events recorded `perTransaction` at a time.
    @discardableResult
    func recordInvalidations(_ count: Int, perTransaction: Int = 1) async throws -> [WebhookEvent] {
        var recorded: [WebhookEvent] = []
        for start in stride(from: 0, to: count, by: perTransaction) {
            let batch = (start..<min(start + perTransaction, count)).map { index in
                WebhookEvent.deviceInvalidated(
                    token: String(format: "%064x", index),
                    app: "com.example.app",
                    environment: "production",
                    reason: "Unregistered",
                    invalidAt: clock.now(),
                    at: clock.now()
                )
            }
            try await events.record(batch)
            recorded += batch
        }
        return recorded
    }

    /// The pending `webhook.deliver` jobs' due times.
    func pendingDeliveryJobs() async throws -> [Date] {
        try await database.query(
            "SELECT due_at FROM jobs WHERE kind = $1 AND status = 'pending' ORDER BY due_at",
            [.text(WebhookJobKind.deliver)]
        ).map { try $0.date("due_at") }
    }
}

/// Checks `Herald-Signature` with the `openssl` command, not HeraldCrypto: HMAC-SHA256 keyed with
/// the secret over "<t>.<body>", hex.
func verifySignatureWithOpenSSL(_ delivery: ReceivedDelivery, secret: String) async throws -> Bool {
    let header = try #require(delivery.headers["herald-signature"])
    let parts = Dictionary(
        uniqueKeysWithValues: header.split(separator: ",").map { part -> (String, String) in
            let pair = part.split(separator: "=", maxSplits: 1)
            return (String(pair[0]), pair.count > 1 ? String(pair[1]) : "")
        }
    )
    let timestamp = try #require(parts["t"])
    let signature = try #require(parts["v1"])
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("herald-signed-\(UUID().uuidString)")
    try Data(Array("\(timestamp).".utf8) + delivery.body).write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    let result = try await ChildProcess.run(
        "/usr/bin/openssl",
        arguments: ["dgst", "-sha256", "-mac", "HMAC", "-macopt", "key:\(secret)", "-r", file.path]
    )
    #expect(result.termination == .exited(0), "openssl: \(result.standardError)")
    let computed = result.standardOutput.split(separator: " ").first.map(String.init) ?? ""
    return computed == signature
}
