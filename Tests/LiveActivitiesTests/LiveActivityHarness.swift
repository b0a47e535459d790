import APNs
import APNsSimulator
import APNsTestSupport
import APNsTransport
import Boards
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

/// The Live Activities jobs as `herald serve` wires them, on a fresh database of one backend:
/// the sender, its queue on a clock the test moves, a worker that runs due jobs when asked, and
/// the real APNs clients sending either over HTTP/2 + TLS to an in-process simulator (`with`) or
/// to an in-memory APNs with no socket, their retry waits on the same clock (`inMemory`).
struct LiveActivityHarness {
    static let topic = "com.example.live"
    static let logger = Logger(label: "herald.live-activities.test", level: .error, handler: RecordingLogHandler())

    let jobs: LiveActivityJobs
    let queue: JobQueue
    let worker: JobWorker
    let service: LiveActivityService
    let clients: APNSClientProvider
    /// The started, ended and failed activities reported, as webhooks would be told.
    let events: RecordedLiveActivityEvents
    private let simulatorIfStarted: APNSSimulator?
    private let apnsIfInMemory: InMemoryAPNs?
    var store: LiveActivityStore { jobs.store }
    var app: APNSAppConfiguration { clients.apps[0] }

    /// The simulator the clients send to (its faults, deliveries and virtual devices), for a
    /// harness made by `with`.
    var simulator: APNSSimulator {
        guard let simulatorIfStarted else { preconditionFailure("an in-memory harness has no simulator") }
        return simulatorIfStarted
    }

    /// The in-memory APNs the clients send to, for a harness made by `inMemory`.
    var apns: InMemoryAPNs {
        guard let apnsIfInMemory else { preconditionFailure("a simulator harness has no in-memory APNs") }
        return apnsIfInMemory
    }

    /// Runs `body` with a harness on `backend` whose jobs read `clock`; its channels are what
    /// `channels` makes of the APNs clients (the clients themselves, as in `herald serve`, or a fake);
    /// the clients retry a push as `retryPolicy` says.
    static func with(
        _ backend: Backend,
        clock: ManualClock,
        channels: (APNSClientProvider) -> any LiveActivityChannels = { $0 },
        retryPolicy: APNSRetryPolicy = .default,
        _ body: (LiveActivityHarness) async throws -> Void
    ) async throws {
        let key = try APNSSigningKey(keyID: "LIVEKEY001", teamID: "LIVETEAM01", privateKey: P256PrivateKey())
        var configuration = APNSSimulator.Configuration()
        configuration.port = 0
        configuration.keys = [APNSSimulatorKey(keyID: key.keyID, publicKey: key.privateKey.publicKey)]
        configuration.teamID = key.teamID
        configuration.topics = [topic]
        configuration.logger = Logger(label: "test.simulator", level: .error)
        let simulator = try APNSSimulator(configuration: configuration)
        let endpoints = APNSEndpoints(all: simulator.endpoint, caFile: simulator.caFile)
        // The real clock: the simulator checks provider tokens against its own.
        let clients = APNSClientProvider(
            apps: [APNSAppConfiguration(bundleID: topic, credentials: .token(key))],
            endpoints: endpoints,
            transports: APNSConnectionPoolFactory(
                logger: Logger(label: "test.apns", level: .error),
                metrics: MetricsRegistry()
            ),
            clock: SystemClock(),
            retryPolicy: retryPolicy,
            logger: Logger(label: "test.apns", level: .error)
        )
        try await run(
            backend,
            clock: clock,
            clients: clients,
            channels: channels,
            simulator: simulator,
            apns: nil,
            body
        )
    }

    /// The same jobs over an in-memory APNs: no socket, and the clients' retry waits and provider
    /// tokens on `clock`, which also stamps the requests the APNs records.
    static func inMemory(
        _ backend: Backend,
        clock: ManualClock,
        channels: (APNSClientProvider) -> any LiveActivityChannels = { $0 },
        retryPolicy: APNSRetryPolicy = .default,
        handlers extra: @escaping ExtraHandlers = { _, _ in },
        _ body: (LiveActivityHarness) async throws -> Void
    ) async throws {
        let key = try APNSSigningKey(keyID: "LIVEKEY001", teamID: "LIVETEAM01", privateKey: P256PrivateKey())
        let apns = InMemoryAPNs(clock: clock)
        let clients = apns.clients(bundleID: topic, key: key, retryPolicy: retryPolicy)
        try await run(
            backend,
            clock: clock,
            clients: clients,
            channels: channels,
            simulator: nil,
            apns: apns,
            extra: extra,
            body
        )
    }

    /// Registers the handlers of another feature's jobs (boards) on the harness's queue.
    typealias ExtraHandlers = (LiveActivityJobs, inout JobHandlers) -> Void

    private static func run(
        _ backend: Backend,
        clock: ManualClock,
        clients: APNSClientProvider,
        channels: (APNSClientProvider) -> any LiveActivityChannels,
        simulator: APNSSimulator?,
        apns: InMemoryAPNs?,
        extra: ExtraHandlers = { _, _ in },
        _ body: (LiveActivityHarness) async throws -> Void
    ) async throws {
        try await withDatabase(backend, poolSize: 4) { db, _ in
            try await Migrator.migrate(
                db,
                JobMigrations.all + DeviceMigrations.all + LiveActivityMigrations.all + BoardMigrations.all,
                logger: logger
            )
            let events = RecordedLiveActivityEvents()
            let jobs = LiveActivityJobs(
                store: LiveActivityStore(database: db),
                users: UsersByTag(),
                clients: clients,
                channels: channels(clients),
                clock: clock,
                channelRetention: 3_600,
                logger: logger,
                metrics: MetricsRegistry(),
                events: events
            )
            var handlers = JobHandlers()
            jobs.register(on: &handlers)
            extra(jobs, &handlers)
            let queue = JobQueue(database: db, handlers: handlers, clock: clock, metrics: MetricsRegistry())
            jobs.attach(queue)
            let harness = LiveActivityHarness(
                jobs: jobs,
                queue: queue,
                worker: JobWorker(
                    queue: queue,
                    configuration: JobWorkerConfiguration(concurrency: 4, batchSize: 4, lease: 120),
                    owner: "live-a",
                    logger: logger
                ),
                service: LiveActivityService(jobs: jobs),
                clients: clients,
                events: events,
                simulatorIfStarted: simulator,
                apnsIfInMemory: apns
            )
            try await withThrowingTaskGroup(of: Void.self) { group in
                if let simulator { group.addTask { try await simulator.run() } }
                do {
                    try await body(harness)
                } catch {
                    await clients.shutdown()
                    simulator?.triggerGracefulShutdown()
                    throw error
                }
                await clients.shutdown()
                simulator?.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }
    }

    /// Reports an instance of `activity` for `user`, as the app would under `/v1/client`.
    @discardableResult
    func report(
        _ activity: LiveActivity,
        _ activityID: String,
        device: String?,
        update: String? = nil,
        user: String = "u1"
    ) async throws -> (LiveActivityInstance, created: Bool) {
        try await service.register(
            LiveActivityInput.Instance(
                activityID: activityID,
                deviceToken: device,
                updateToken: update,
                state: .active
            ),
            for: activity.id,
            userID: user,
            app: nil
        )
    }

    /// Registers a push-to-start token of `u1` for `LoanAttributes`, stamped at `time`.
    func registerPushToStart(_ token: String, at time: Date) async throws {
        _ = try await store.register(
            PushToStartRegistration(
                app: Self.topic,
                environment: .production,
                attributesType: "LoanAttributes",
                token: token,
                userID: "u1",
                registeredAt: time
            )
        )
    }

    /// A loan activity of `u1`, with `channel`.
    static func request(channel: LiveActivityChannelRequest?) -> LiveActivityRequest {
        LiveActivityRequest(
            attributesType: "LoanAttributes",
            attributes: .object(["product": .string("Credit card")]),
            contentState: .object(["step": .integer(1)]),
            alert: LiveActivityAlert(title: "Application started", body: "We are checking your data"),
            audience: .users(["u1"]),
            channel: channel
        )
    }
}

/// The users of a tags or everyone audience, from a table instead of the device registry: these
/// suites send push-to-start to tokens and users; `herald serve`'s suites resolve tags through the
/// registry (`DeviceRegistryUsers`).
struct UsersByTag: LiveActivityUserDirectory {
    var tags: [String: [String]] = [:]

    func users(app: String, environment: APNSEnvironment, matching selector: LiveActivityUserSelector) -> [String] {
        switch selector {
        case .anyTag(let wanted): Array(Set(wanted.flatMap { tags[$0] ?? [] })).sorted()
        case .allTags(let wanted):
            Array(wanted.map { Set(tags[$0] ?? []) }.reduce(Set(tags.values.joined())) { $0.intersection($1) }).sorted()
        case .all: Array(Set(tags.values.joined())).sorted()
        }
    }
}

/// Records what Live Activities report to webhooks: each event with whether it was reported inside
/// a transaction that could still write (a statement on it succeeds), and the commits announced.
final class RecordedLiveActivityEvents: LiveActivityEvents {
    private let state = Mutex<(events: [LiveActivityEvent], commits: Int)>(([], 0))

    var all: [LiveActivityEvent] { state.withLock { $0.events } }
    var commits: Int { state.withLock { $0.commits } }

    func liveActivitiesChanged(_ events: [LiveActivityEvent], on executor: any DatabaseExecutor) async throws {
        // What a webhook recorder does: write on the changing transaction.
        _ = try await executor.query("SELECT 1 AS one", [])
        state.withLock { $0.events += events }
    }

    func liveActivityEventsCommitted() {
        state.withLock { $0.commits += 1 }
    }
}
