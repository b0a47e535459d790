import APNs
import APNsSimulator
import DatabaseTestSupport
import Devices
import Foundation
import HeraldCore
import HeraldCrypto
import Jobs
import Notifications
import Storage
import Synchronization
import Testing

@testable import LiveActivities

/// Channels that exist only here: the ids handed out and the deletions asked for.
final class RecordingChannels: LiveActivityChannels {
    private let deletions = Mutex<[String]>([])

    /// The channel ids deleted so far, in order.
    var deleted: [String] { deletions.withLock { $0 } }

    func create(
        app: APNSAppConfiguration,
        environment: APNSEnvironment,
        storagePolicy: APNSChannelMessageStoragePolicy
    ) async throws -> APNSChannelID {
        APNSChannelID(rawValue: Data(UUID().uuidString.utf8).base64EncodedString())
    }

    func delete(app: APNSAppConfiguration, environment: APNSEnvironment, channelID: APNSChannelID) async throws {
        deletions.withLock { $0.append(channelID.rawValue) }
    }
}

/// The 8-hour expiry on every backend, with the Live Activities jobs on a queue whose clock the
/// test moves, and the push-to-starts sent over HTTP/2 + TLS to an in-process simulator.
@Suite("LiveActivities: the 8-hour expiry on every backend")
struct LiveActivityExpiryTests {
    static let topic = "com.example.expiry"
    static let logger = Logger(label: "herald.live-activities.test", level: .error, handler: RecordingLogHandler())
    let t = Date(timeIntervalSince1970: 1_790_000_000)

    /// The sender, its queue on `clock`, a worker that runs due jobs by hand, and the service.
    struct Stack {
        let sender: LiveActivitySender
        let queue: JobQueue
        let worker: JobWorker
        let service: LiveActivityService
        var store: LiveActivityStore { sender.store }
    }

    func withStack(
        _ backend: Backend,
        clock: ManualClock,
        channels: RecordingChannels,
        _ body: (Stack) async throws -> Void
    ) async throws {
        let key = try APNSSigningKey(keyID: "EXPIRYKEY1", teamID: "EXPIRYTEAM", privateKey: P256PrivateKey())
        var configuration = APNSSimulator.Configuration()
        configuration.port = 0
        configuration.keys = [APNSSimulatorKey(keyID: key.keyID, publicKey: key.privateKey.publicKey)]
        configuration.teamID = key.teamID
        configuration.topics = [Self.topic]
        configuration.logger = Logger(label: "test.simulator", level: .error)
        let simulator = try APNSSimulator(configuration: configuration)
        var endpoints = APNSEndpoints()
        endpoints.production = simulator.endpoint
        endpoints.sandbox = simulator.endpoint
        endpoints.caFile = simulator.caFile
        let clients = APNSClientProvider(
            apps: [APNSAppConfiguration(bundleID: Self.topic, credentials: .token(key))],
            endpoints: endpoints,
            logger: Logger(label: "test.apns", level: .error),
            metrics: MetricsRegistry()
        )
        try await withDatabase(backend, poolSize: 4) { db, _ in
            try await Migrator.migrate(
                db,
                JobMigrations.all + DeviceMigrations.all + LiveActivityMigrations.all,
                logger: Self.logger
            )
            let sender = LiveActivitySender(
                store: LiveActivityStore(database: db),
                devices: DeviceStore(database: db),
                clients: clients,
                channels: channels,
                clock: clock,
                channelRetention: 3_600,
                logger: Self.logger,
                metrics: MetricsRegistry()
            )
            var handlers = JobHandlers()
            sender.register(on: &handlers)
            let queue = JobQueue(database: db, handlers: handlers, clock: clock, metrics: MetricsRegistry())
            sender.attach(queue)
            let worker = JobWorker(
                queue: queue,
                configuration: JobWorkerConfiguration(concurrency: 4, batchSize: 4, lease: 120),
                owner: "expiry-a",
                logger: Self.logger
            )
            let stack = Stack(
                sender: sender,
                queue: queue,
                worker: worker,
                service: LiveActivityService(sender: sender)
            )
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await simulator.run() }
                do {
                    try await body(stack)
                } catch {
                    await clients.shutdown()
                    simulator.triggerGracefulShutdown()
                    throw error
                }
                await clients.shutdown()
                simulator.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }
    }

    func request(channel: LiveActivityChannelRequest?) -> LiveActivityRequest {
        LiveActivityRequest(
            attributesType: "LoanAttributes",
            attributes: .object(["product": .string("Credit card")]),
            contentState: .object(["step": .integer(1)]),
            alert: LiveActivityAlert(title: "Application started", body: "We are checking your data"),
            audience: .users(["u1"]),
            channel: channel
        )
    }

    @Test(
        "an activity started at T is expired once the queue's clock passes T + 8 h and its channel deleted after the retention; one ended before stays ended",
        arguments: Backend.allCases
    )
    func expiry(backend: Backend) async throws {
        let clock = ManualClock(t)
        let channels = RecordingChannels()
        try await withStack(backend, clock: clock, channels: channels) { stack in
            _ = try await stack.store.register(
                PushToStartRegistration(
                    app: Self.topic,
                    environment: .production,
                    attributesType: "LoanAttributes",
                    token: String(repeating: "e1", count: 32),
                    userID: "u1",
                    registeredAt: t
                )
            )
            let (running, _) = try await stack.service.create(request(channel: .create(storagePolicy: 0)))
            let (ended, _) = try await stack.service.create(request(channel: nil))
            let channel = try #require(running.channelID)
            #expect(try await stack.worker.runDueJobs() == 2)
            for id in [running.id, ended.id] {
                let started = try #require(try await stack.store.activity(id))
                #expect(started.state == .started, "\(started.failureReason ?? "")")
                #expect(started.startedAt == t)
            }

            // The second one ends an hour later, long before the expiry.
            clock.advance(3_600)
            _ = try await stack.service.end(
                ended.id,
                LiveActivityUpdate(event: .end, contentState: .object(["step": .integer(2)])),
                hasContent: true
            )
            try await stack.worker.runDueJobs()
            #expect(try await stack.store.activity(ended.id)?.state == .ended)

            // One second before T + 8 h nothing expires; at T + 8 h the running one does.
            clock.set(t.addingTimeInterval(LiveActivityLimits.maximumActivityDuration - 1))
            try await stack.worker.runDueJobs()
            #expect(try await stack.store.activity(running.id)?.state == .started)
            clock.set(t.addingTimeInterval(LiveActivityLimits.maximumActivityDuration))
            #expect(try await stack.worker.runDueJobs() == 2, "both activities' expiry jobs")
            let expired = try #require(try await stack.store.activity(running.id))
            #expect(expired.state == .expired)
            #expect(expired.endedAt == t.addingTimeInterval(LiveActivityLimits.maximumActivityDuration))
            let stayed = try #require(try await stack.store.activity(ended.id))
            #expect(stayed.state == .ended)
            #expect(stayed.endedAt == t.addingTimeInterval(3_600))

            // The created channel's deletion is due when the retention has passed after the expiry.
            let deletions = try await stack.queue.list(statuses: [.pending], kind: LiveActivityJobKind.deleteChannel)
            #expect(deletions.count == 1)
            #expect(
                deletions.first?.dueAt == t.addingTimeInterval(LiveActivityLimits.maximumActivityDuration + 3_600)
            )
            #expect(try LiveActivitySender.payload(try #require(deletions.first)).id == running.id)
            try await stack.worker.runDueJobs()
            #expect(channels.deleted.isEmpty)
            clock.advance(3_600)
            #expect(try await stack.worker.runDueJobs() == 1)
            #expect(channels.deleted == [channel])
            #expect(try await stack.store.activity(running.id)?.state == .expired)
        }
    }
}
