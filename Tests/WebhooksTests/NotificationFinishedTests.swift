import APNs
import APNsSimulator
import APNsTransport
import AsyncTestSupport
import DatabaseTestSupport
import Devices
import Foundation
import HeraldCore
import HeraldCrypto
import Jobs
import Notifications
import Storage
import Testing

@testable import Webhooks

/// `notification.finished` and `device.invalidated` end to end: a notification sent by the real
/// APNs client over HTTP/2 and TLS to the simulator, which answers 410 for one token; the device
/// becoming invalid and the notification's finish are each delivered once.
@Suite("notification.finished and device.invalidated")
struct NotificationFinishedTests {
    static let topic = "com.example.webhooks"

    @Test(
        "a finished notification and the device APNs called dead are each reported once",
        arguments: Backend.allCases
    )
    func finishedEndToEnd(backend: Backend) async throws {
        let key = try APNSSigningKey(keyID: "HOOKKEY001", teamID: "HOOKTEAM01", privateKey: P256PrivateKey())
        var simulatorConfiguration = APNSSimulator.Configuration()
        simulatorConfiguration.port = 0
        simulatorConfiguration.keys = [APNSSimulatorKey(keyID: key.keyID, publicKey: key.privateKey.publicKey)]
        simulatorConfiguration.teamID = key.teamID
        simulatorConfiguration.topics = [Self.topic]
        simulatorConfiguration.logger = Logger(label: "test.simulator", level: .error)
        let simulator = try APNSSimulator(configuration: simulatorConfiguration)
        let endpoints = APNSEndpoints(all: simulator.endpoint, caFile: simulator.caFile)
        let clients = APNSClientProvider(
            apps: [APNSAppConfiguration(bundleID: Self.topic, credentials: .token(key))],
            endpoints: endpoints,
            transports: APNSConnectionPoolFactory(logger: quietLogger, metrics: MetricsRegistry()),
            clock: SystemClock(),
            logger: quietLogger
        )
        let receiver = try Receiver()
        try await receiver.run {
            try await withDatabase(backend, poolSize: 4) { db, _ in
                try await Migrator.migrate(
                    db,
                    JobMigrations.all + NotificationMigrations.all + DeviceMigrations.all + WebhookMigrations.all,
                    logger: quietLogger
                )
                // Retries stay frequent: on a loaded machine a first delivery can fail to connect,
                // and the default backoff would put the next attempt past the wait below.
                var configuration = WebhookHarness.configuration()
                configuration.retryMaximum = 5
                let webhooks = try WebhookHarness.make(db, clock: SystemClock(), configuration: configuration)
                let webhook = try await webhooks.createWebhook(url: receiver.url)
                let sender = NotificationSender(
                    store: NotificationStore(
                        database: db,
                        devices: DeviceStore(database: db, events: webhooks.events),
                        finishObserver: webhooks.events
                    ),
                    clients: clients,
                    metrics: MetricsRegistry(),
                    logger: quietLogger
                )
                var handlers = JobHandlers()
                NotificationService.register(sender, on: &handlers)
                webhooks.deliverer.register(on: &handlers)
                let queue = JobQueue(database: db, handlers: handlers, metrics: MetricsRegistry())
                webhooks.events.attach(queue)
                let service = NotificationService(
                    queue: queue,
                    sender: sender,
                    metrics: MetricsRegistry(),
                    logger: quietLogger
                )
                let worker = JobWorker(
                    queue: queue,
                    configuration: JobWorkerConfiguration(concurrency: 4, batchSize: 4, lease: 30),
                    owner: "test-worker",
                    logger: quietLogger
                )
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await simulator.run() }
                    group.addTask { try await worker.run() }
                    let dead = String(repeating: "b", count: 64)
                    let unregisteredAt = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down) - 60)
                    simulator.setToken(APNSSimulatorTokenState(token: dead, unregisteredAt: unregisteredAt))
                    let body: [String: Any] = [
                        "tokens": [String(repeating: "a", count: 64), String(repeating: "b", count: 64)],
                        "payload": ["aps": ["alert": "Hello"]],
                    ]
                    let request = try NotificationRequest.parse(
                        Array(try JSONSerialization.data(withJSONObject: body)),
                        now: Date()
                    )
                    let notification = try await service.create(request)
                    try await eventually("the events are delivered and every job is done", timeout: .seconds(240)) {
                        let active = try await db.queryFirst(
                            "SELECT COUNT(*) AS n FROM jobs WHERE status IN ('pending', 'running')"
                        )?.int("n")
                        return try await webhooks.store.state(id: webhook.id)?.delivered == 2 && active == 0
                    }
                    worker.triggerGracefulShutdown()
                    await clients.shutdown()
                    simulator.triggerGracefulShutdown()
                    try await group.waitForAll()

                    let events = receiver.deliveries.flatMap(\.events)
                    #expect(
                        events.compactMap { $0["type"] as? String }.sorted() == [
                            "device.invalidated", "notification.finished",
                        ]
                    )
                    let invalidated = try #require(events.first { $0["type"] as? String == "device.invalidated" })
                    let device = try #require(invalidated["data"] as? [String: Any])
                    #expect(device["token"] as? String == dead)
                    #expect(device["app"] as? String == Self.topic)
                    #expect(
                        device["environment"] as? String
                            == (notification.environment == .production ? "production" : "sandbox")
                    )
                    #expect(device["reason"] as? String == "Unregistered")
                    #expect((device["invalid_at"] as? String).flatMap { RFC3339.date(from: $0) } == unregisteredAt)
                    let event = try #require(events.first { $0["type"] as? String == "notification.finished" })
                    let data = try #require(event["data"] as? [String: Any])
                    #expect(data["id"] as? String == RequestIdentifier.lowercaseString(notification.id))
                    #expect(data["status"] as? String == "done")
                    #expect(data["app"] as? String == Self.topic)
                    let counts = try #require(data["counts"] as? [String: Int])
                    #expect(counts["sent"] == 1)
                    #expect(counts["dead"] == 1)
                    #expect(counts["failed"] == 0)
                    #expect(data["total"] as? Int == 2)
                }
            }
        }
    }
}
