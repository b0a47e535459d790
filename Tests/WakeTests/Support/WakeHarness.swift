import APNs
import APNsSimulator
import APNsTestSupport
import APNsTransport
import CloudKit
import DatabaseTestSupport
import Devices
import Foundation
import HeraldCore
import HeraldCrypto
import Jobs
import JobsTestSupport
import Notifications
import Storage
import Synchronization
import Testing
import Wake

let quietLogger = Logger(label: "herald.wake.test", level: .error, handler: RecordingLogHandler())

/// One Herald instance's wake stack on a shared database: its runner, queue, worker and service.
struct WakeInstance {
    let store: WakeStore
    let devices: DeviceStore
    let runner: WakeRunner
    let queue: JobQueue
    let worker: JobWorker
    let service: WakeService
    let metrics: MetricsRegistry

    init(
        database: any Database,
        clients: APNSClientProvider,
        clock: ManualClock,
        owner: String,
        minimumInterval: TimeInterval,
        publisher: (any WakeRecordPublisher)?,
        pageSize: Int = 1_000
    ) {
        metrics = MetricsRegistry()
        store = WakeStore(database: database)
        devices = DeviceStore(database: database)
        runner = WakeRunner(
            store: store,
            devices: devices,
            clients: clients,
            publisher: publisher,
            clock: clock,
            minimumInterval: minimumInterval,
            pageSize: pageSize,
            metrics: metrics,
            logger: quietLogger
        )
        var handlers = JobHandlers()
        runner.register(on: &handlers)
        queue = JobQueue(database: database, handlers: handlers, clock: clock, metrics: metrics)
        runner.attach(queue)
        worker = JobWorker(
            queue: queue,
            configuration: JobWorkerConfiguration(concurrency: 4, batchSize: 4, lease: 120),
            owner: owner,
            logger: quietLogger
        )
        service = WakeService(store: store, queue: queue, apps: clients.apps, cloudKitConfigured: publisher != nil)
    }

    /// Parses and creates a schedule from a JSON object, as `POST /v1/wake-schedules` does.
    func create(_ body: [String: Any]) async throws -> WakeSchedule {
        let request = try WakeScheduleRequest.parse(
            Array(try JSONSerialization.data(withJSONObject: body)),
            now: queue.clock.now()
        )
        return try await service.create(request)
    }
}

/// The wake stack as `herald serve` builds it, on a fresh database of one backend, with the real
/// APNs client sending either over HTTP/2 + TLS to an in-process simulator (`with`) or to an
/// in-memory APNs with no socket, its retry waits on the harness's manual clock (`inMemory`).
struct WakeHarness {
    static let topic = "com.example.wake"
    private let simulatorIfStarted: APNSSimulator?
    private let apnsIfInMemory: InMemoryAPNs?
    let database: any Database
    let clients: APNSClientProvider
    let clock: ManualClock
    let instance: WakeInstance

    /// The simulator of a harness made by `with`.
    var simulator: APNSSimulator {
        guard let simulatorIfStarted else { preconditionFailure("an in-memory harness has no simulator") }
        return simulatorIfStarted
    }

    /// The APNs of a harness made by `inMemory`.
    var apns: InMemoryAPNs {
        guard let apnsIfInMemory else { preconditionFailure("a simulator harness has no in-memory APNs") }
        return apnsIfInMemory
    }

    static func with(
        _ backend: Backend,
        minimumInterval: TimeInterval = 1_200,
        publisher: (any WakeRecordPublisher)? = nil,
        cloudKit: Bool = false,
        pageSize: Int = 1_000,
        _ body: (WakeHarness) async throws -> Void
    ) async throws {
        let key = try APNSSigningKey(keyID: "WAKEKEY001", teamID: "WAKETEAM01", privateKey: P256PrivateKey())
        var configuration = APNSSimulator.Configuration()
        configuration.port = 0
        configuration.keys = [APNSSimulatorKey(keyID: key.keyID, publicKey: key.privateKey.publicKey)]
        configuration.teamID = key.teamID
        configuration.topics = [topic]
        configuration.deliveryCapacity = 20_000
        configuration.logger = Logger(label: "test.simulator", level: .error)
        // With `cloudKit`, the simulator also serves CloudKit for a key of its own, and the
        // publisher is the real CloudKit client's.
        let cloudKitKey = P256PrivateKey()
        if cloudKit {
            configuration.cloudKitKeys = [
                APNSSimulatorCloudKitKey(keyID: "WAKECLOUDKIT", publicKey: cloudKitKey.publicKey)
            ]
        }
        let simulator = try APNSSimulator(configuration: configuration)
        var publisher = publisher
        var cloudKitPublisher: CloudKitWakePublisher?
        if cloudKit {
            var settings = CloudKitSettings()
            settings.defaultKey = CloudKitSigner(keyID: "WAKECLOUDKIT", privateKey: cloudKitKey)
            settings.clientConfiguration.url = simulator.url
            settings.clientConfiguration.caFile = simulator.caFile
            settings.clientConfiguration.connectTimeout = .seconds(60)
            settings.clientConfiguration.logger = Logger(label: "test.cloudkit", level: .error)
            cloudKitPublisher = CloudKitWakePublisher(settings: settings)
            publisher = cloudKitPublisher
        }
        let endpoints = APNSEndpoints(all: simulator.endpoint, caFile: simulator.caFile)
        var pool = APNSConnectionPool.Configuration()
        pool.maxConnections = 2
        // The real clock: the simulator checks provider tokens against its own.
        let clients = APNSClientProvider(
            apps: [APNSAppConfiguration(bundleID: topic, credentials: .token(key))],
            endpoints: endpoints,
            transports: APNSConnectionPoolFactory(
                configuration: pool,
                logger: Logger(label: "test.apns", level: .error),
                metrics: MetricsRegistry()
            ),
            clock: SystemClock(),
            logger: Logger(label: "test.apns", level: .error)
        )
        try await run(
            backend,
            clients: clients,
            clock: ManualClock(Date(timeIntervalSince1970: 1_790_000_000)),
            simulator: simulator,
            apns: nil,
            minimumInterval: minimumInterval,
            publisher: publisher,
            cloudKitPublisher: cloudKitPublisher,
            pageSize: pageSize,
            body
        )
    }

    /// The same stack over an in-memory APNs: no socket, no CloudKit; the clients' retry waits
    /// and provider tokens on the harness's clock, which also stamps the requests APNs records.
    static func inMemory(
        _ backend: Backend,
        minimumInterval: TimeInterval = 1_200,
        retryPolicy: APNSRetryPolicy = .default,
        pageSize: Int = 1_000,
        _ body: (WakeHarness) async throws -> Void
    ) async throws {
        let key = try APNSSigningKey(keyID: "WAKEKEY001", teamID: "WAKETEAM01", privateKey: P256PrivateKey())
        let clock = ManualClock(Date(timeIntervalSince1970: 1_790_000_000))
        let apns = InMemoryAPNs(clock: clock)
        let clients = apns.clients(bundleID: topic, key: key, retryPolicy: retryPolicy)
        try await run(
            backend,
            clients: clients,
            clock: clock,
            simulator: nil,
            apns: apns,
            minimumInterval: minimumInterval,
            publisher: nil,
            cloudKitPublisher: nil,
            pageSize: pageSize,
            body
        )
    }

    private static func run(
        _ backend: Backend,
        clients: APNSClientProvider,
        clock: ManualClock,
        simulator: APNSSimulator?,
        apns: InMemoryAPNs?,
        minimumInterval: TimeInterval,
        publisher: (any WakeRecordPublisher)?,
        cloudKitPublisher: CloudKitWakePublisher?,
        pageSize: Int,
        _ body: (WakeHarness) async throws -> Void
    ) async throws {
        try await withDatabase(backend, poolSize: 4) { db, _ in
            try await Migrator.migrate(
                db,
                JobMigrations.all + DeviceMigrations.all + WakeMigrations.all,
                logger: quietLogger
            )
            let instance = WakeInstance(
                database: db,
                clients: clients,
                clock: clock,
                owner: "instance-a",
                minimumInterval: minimumInterval,
                publisher: publisher,
                pageSize: pageSize
            )
            try await withThrowingTaskGroup(of: Void.self) { group in
                if let simulator { group.addTask { try await simulator.run() } }
                let harness = WakeHarness(
                    simulatorIfStarted: simulator,
                    apnsIfInMemory: apns,
                    database: db,
                    clients: clients,
                    clock: clock,
                    instance: instance
                )
                do {
                    try await body(harness)
                } catch {
                    await cloudKitPublisher?.close()
                    await clients.shutdown()
                    simulator?.triggerGracefulShutdown()
                    throw error
                }
                await cloudKitPublisher?.close()
                await clients.shutdown()
                simulator?.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }
    }

    /// `count` distinct valid tokens, starting from `offset`.
    static func tokens(_ count: Int, offset: Int = 0) -> [String] {
        (offset..<(offset + count)).map { String(format: "%064x", $0 + 1) }
    }

    /// Registers devices of the harness's app in production, each with `tags`.
    func register(_ tokens: [String], tags: [String] = []) async throws {
        _ = try await instance.devices.register(
            tokens.map {
                DeviceRegistration(
                    token: $0,
                    app: Self.topic,
                    environment: .production,
                    tags: tags,
                    registeredAt: clock.now()
                )
            }
        )
    }

    /// Delivered pushes per token.
    func delivered() -> [String: Int] {
        var counts: [String: Int] = [:]
        for delivery in simulator.deliveries() where delivery.isDelivered {
            if let token = delivery.token { counts[token, default: 0] += 1 }
        }
        return counts
    }
}
