import APNs
import APNsSimulator
import APNsTestSupport
import APNsTransport
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

let quietLogger = Logger(label: "herald.notifications.test", level: .error, handler: RecordingLogHandler())

/// The notifications stack as `herald serve` builds it, on a fresh database of one backend, with
/// the real APNs client sending either over HTTP/2 + TLS to an in-process simulator
/// (``with(_:clock:retryPolicy:held:waitBackupDelay:resolver:pageSize:deviceEvents:_:)``) or to an
/// in-memory APNs, with no socket, its retry waits on the manual clock
/// (``inMemory(_:clock:retryPolicy:resolver:pageSize:deviceEvents:_:)``).
struct NotificationHarness {
    static let topic = "com.example.notify"
    private let simulatorIfStarted: APNSSimulator?
    private let apnsIfInMemory: InMemoryAPNs?
    let database: any Database
    let service: NotificationService
    let store: NotificationStore
    let queue: JobQueue
    let sender: NotificationSender
    let worker: JobWorker
    let clock: ManualClock
    let metrics: MetricsRegistry

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
        clock: ManualClock = ManualClock(Date()),
        retryPolicy: APNSRetryPolicy = .default,
        held: HeldResponses? = nil,
        waitBackupDelay: TimeInterval? = nil,
        resolver: (any AudienceResolver)? = nil,
        pageSize: Int = 1_000,
        deviceEvents: (any DeviceEvents)? = nil,
        _ body: (NotificationHarness) async throws -> Void
    ) async throws {
        let key = try APNSSigningKey(keyID: "NOTIFKEY01", teamID: "NOTIFTEAM1", privateKey: P256PrivateKey())
        var configuration = APNSSimulator.Configuration()
        configuration.port = 0
        configuration.keys = [APNSSimulatorKey(keyID: key.keyID, publicKey: key.privateKey.publicKey)]
        configuration.teamID = key.teamID
        configuration.topics = [topic]
        configuration.deliveryCapacity = 20_000
        configuration.logger = Logger(label: "test.simulator", level: .error)
        if let held {
            configuration.clock = HeldClock(held: held)
        }
        let simulator = try APNSSimulator(configuration: configuration)
        let endpoints = APNSEndpoints(all: simulator.endpoint, caFile: simulator.caFile)
        let metrics = MetricsRegistry()
        var pool = APNSConnectionPool.Configuration()
        pool.maxConnections = 2
        // The real clock: the simulator checks provider tokens against its own.
        let clients = APNSClientProvider(
            apps: [APNSAppConfiguration(bundleID: topic, credentials: .token(key))],
            endpoints: endpoints,
            transports: APNSConnectionPoolFactory(
                configuration: pool,
                logger: Logger(label: "test.apns", level: .error),
                metrics: metrics
            ),
            clock: SystemClock(),
            retryPolicy: retryPolicy,
            logger: Logger(label: "test.apns", level: .error)
        )
        try await run(
            backend,
            clients: clients,
            clock: clock,
            metrics: metrics,
            simulator: simulator,
            apns: nil,
            held: held,
            waitBackupDelay: waitBackupDelay,
            resolver: resolver,
            pageSize: pageSize,
            deviceEvents: deviceEvents,
            body
        )
    }

    /// The same stack over an in-memory APNs: no socket, and the clients' retry waits and
    /// provider tokens on `clock`.
    static func inMemory(
        _ backend: Backend,
        clock: ManualClock = ManualClock(),
        retryPolicy: APNSRetryPolicy = .default,
        resolver: (any AudienceResolver)? = nil,
        pageSize: Int = 1_000,
        deviceEvents: (any DeviceEvents)? = nil,
        _ body: (NotificationHarness) async throws -> Void
    ) async throws {
        let key = try APNSSigningKey(keyID: "NOTIFKEY01", teamID: "NOTIFTEAM1", privateKey: P256PrivateKey())
        let apns = InMemoryAPNs(clock: clock)
        let metrics = MetricsRegistry()
        let clients = apns.clients(bundleID: topic, key: key, retryPolicy: retryPolicy)
        try await run(
            backend,
            clients: clients,
            clock: clock,
            metrics: metrics,
            simulator: nil,
            apns: apns,
            held: nil,
            waitBackupDelay: nil,
            resolver: resolver,
            pageSize: pageSize,
            deviceEvents: deviceEvents,
            body
        )
    }

    private static func run(
        _ backend: Backend,
        clients: APNSClientProvider,
        clock: ManualClock,
        metrics: MetricsRegistry,
        simulator: APNSSimulator?,
        apns: InMemoryAPNs?,
        held: HeldResponses?,
        waitBackupDelay: TimeInterval?,
        resolver: (any AudienceResolver)?,
        pageSize: Int,
        deviceEvents: (any DeviceEvents)?,
        _ body: (NotificationHarness) async throws -> Void
    ) async throws {
        try await withDatabase(backend, poolSize: 4) { db, _ in
            try await Migrator.migrate(
                db,
                JobMigrations.all + NotificationMigrations.all + DeviceMigrations.all,
                logger: quietLogger
            )
            let store = NotificationStore(database: db, devices: DeviceStore(database: db, events: deviceEvents))
            let sender = NotificationSender(
                store: store,
                clients: clients,
                clock: clock,
                resolver: resolver,
                pageSize: pageSize,
                metrics: metrics,
                logger: quietLogger
            )
            var handlers = JobHandlers()
            NotificationService.register(
                sender,
                on: &handlers,
                options: JobKindOptions(maxAttempts: 3, retryBase: 60, retryMaximum: 60)
            )
            let queue = JobQueue(database: db, handlers: handlers, clock: clock, metrics: metrics)
            var service = NotificationService(queue: queue, sender: sender, metrics: metrics, logger: quietLogger)
            if let waitBackupDelay { service.waitBackupDelay = waitBackupDelay }
            let worker = JobWorker(
                queue: queue,
                configuration: JobWorkerConfiguration(concurrency: 4, batchSize: 4, lease: 120),
                owner: "test-worker",
                logger: quietLogger
            )
            try await withThrowingTaskGroup(of: Void.self) { group in
                if let simulator { group.addTask { try await simulator.run() } }
                let harness = NotificationHarness(
                    simulatorIfStarted: simulator,
                    apnsIfInMemory: apns,
                    database: db,
                    service: service,
                    store: store,
                    queue: queue,
                    sender: sender,
                    worker: worker,
                    clock: clock,
                    metrics: metrics
                )
                do {
                    try await body(harness)
                } catch {
                    held?.releaseAll()
                    await clients.shutdown()
                    simulator?.triggerGracefulShutdown()
                    throw error
                }
                held?.releaseAll()
                await clients.shutdown()
                simulator?.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }
    }

    /// `count` distinct valid tokens, starting from `offset`.
    static func tokens(_ count: Int, offset: Int = 0) -> [String] {
        (offset..<(offset + count)).map { String(format: "%064x", $0) }
    }

    /// A request body for `tokens`.
    static func body(tokens: [String], extra: [String: Any] = [:]) -> [UInt8] {
        var object: [String: Any] = ["tokens": tokens, "payload": ["aps": ["alert": "Hello"]]]
        for (key, value) in extra { object[key] = value }
        return Array(try! JSONSerialization.data(withJSONObject: object))
    }

    /// Parses and creates a notification.
    func create(tokens: [String], extra: [String: Any] = [:]) async throws -> StoredNotification {
        let request = try NotificationRequest.parse(Self.body(tokens: tokens, extra: extra), now: clock.now())
        return try await service.create(request)
    }

    /// The notification's send job.
    func job(of notification: StoredNotification) async throws -> Job {
        let id = try #require(notification.jobID)
        return try #require(try await queue.job(id: id))
    }

    /// Every result of a notification, all pages.
    func results(_ id: UUID) async throws -> [DeliveryResult] {
        var all: [DeliveryResult] = []
        var cursor: String?
        repeat {
            let page = try await store.deliveries(id: id, limit: 1_000, cursor: cursor)
            all += page.items
            cursor = page.nextCursor
        } while cursor != nil
        return all
    }
}

/// Responses the simulator holds back until the test lets them go: a delay fault of `n` seconds
/// (`APNSSimulatorFault(.delay(.seconds(n)), token: …)`) makes that response wait for
/// ``release(_:)`` of `n`, whatever the clock.
/// The simulator's clock when responses are held: the real time, and latency waits that
/// ``HeldResponses`` holds.
struct HeldClock: HeraldClock {
    let held: HeldResponses

    func now() -> Date { SystemClock().now() }
    func uptime() -> Duration { SystemClock().uptime() }

    func sleep(until deadline: Date) async throws {
        await held.hold(Duration(timeInterval: max(0, deadline.timeIntervalSince(now()))))
    }

    func sleep(for duration: Duration) async throws {
        await held.hold(duration)
    }
}

final class HeldResponses: Sendable {
    private struct Hold {
        var held = 0
        var released = false
        var heldWaiters: [CheckedContinuation<Void, Never>] = []
        var releaseWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let holds = Mutex<[Int64: Hold]>([:])

    /// The simulator's sleep: waits until the hold named by the delay's whole seconds is released.
    func hold(_ duration: Duration) async {
        let key = duration.components.seconds
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (resumeNow, waiters) = holds.withLock { holds -> (Bool, [CheckedContinuation<Void, Never>]) in
                var hold = holds[key] ?? Hold()
                hold.held += 1
                let waiters = hold.heldWaiters
                hold.heldWaiters = []
                if !hold.released { hold.releaseWaiters.append(continuation) }
                let released = hold.released
                holds[key] = hold
                return (released, waiters)
            }
            for waiter in waiters { waiter.resume() }
            if resumeNow { continuation.resume() }
        }
    }

    /// Returns once a response is held under `seconds`; fails the test after `within` seconds.
    func waitUntilHeld(_ seconds: Int64, within: Double = 20) async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let now = self.holds.withLock { holds -> Bool in
                        var hold = holds[seconds] ?? Hold()
                        defer { holds[seconds] = hold }
                        if hold.held > 0 { return true }
                        hold.heldWaiters.append(continuation)
                        return false
                    }
                    if now { continuation.resume() }
                }
                return true
            }
            group.addTask {
                // The liveness bound the hold races: it fails the test instead of hanging it.
                try await Task.sleep(for: .milliseconds(Int64(within * 1000)))
                return false
            }
            let held = try await group.next() ?? false
            if !held {
                // Let the waiting child return.
                let waiters = holds.withLock { holds -> [CheckedContinuation<Void, Never>] in
                    defer { holds[seconds]?.heldWaiters = [] }
                    return holds[seconds]?.heldWaiters ?? []
                }
                for waiter in waiters { waiter.resume() }
                throw TestSetupError(description: "no response was held under \(seconds) s within \(within) s")
            }
            group.cancelAll()
        }
    }

    /// Lets every response held (now or later) under `seconds` go.
    func release(_ seconds: Int64) {
        let waiters = holds.withLock { holds -> [CheckedContinuation<Void, Never>] in
            var hold = holds[seconds] ?? Hold()
            hold.released = true
            let waiters = hold.releaseWaiters
            hold.releaseWaiters = []
            holds[seconds] = hold
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Lets everything go (a failed test must not leave the simulator waiting).
    func releaseAll() {
        let keys = holds.withLock { Array($0.keys) }
        for key in keys { release(key) }
    }
}
