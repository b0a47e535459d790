import APNs
import APNsTestSupport
import APNsTransport
import DatabaseTestSupport
import Foundation
import HeraldCore
import HeraldCrypto
import Jobs
import LiveActivities
import Storage
import Synchronization
import Testing

@testable import Polls

/// Broadcast channels that exist only here.
struct FakeChannels: LiveActivityChannels {
    func create(
        app: APNSAppConfiguration,
        environment: APNSEnvironment,
        storagePolicy: APNSChannelMessageStoragePolicy
    ) async throws -> APNSChannelID {
        APNSChannelID(rawValue: Data(UUID().uuidString.utf8).base64EncodedString())
    }

    func delete(app: APNSAppConfiguration, environment: APNSEnvironment, channelID: APNSChannelID) async throws {}
}

/// No tags: polls name their members.
struct NoDirectory: LiveActivityUserDirectory {
    func users(app: String, environment: APNSEnvironment, matching selector: LiveActivityUserSelector) -> [String] {
        []
    }
}

/// The Live Activities events, as webhooks would hear them.
final class RecordedActivityEvents: LiveActivityEvents {
    private let events = Mutex<[LiveActivityEvent]>([])
    var all: [LiveActivityEvent] { events.withLock { $0 } }

    func liveActivitiesChanged(_ events: [LiveActivityEvent], on executor: any DatabaseExecutor) async throws {
        self.events.withLock { $0 += events }
    }

    func liveActivityEventsCommitted() {}
}

/// Writes each `poll.finalized` event as a row of `poll_events_test` in the finalizing
/// transaction, as the webhooks' outbox does: a rolled-back transaction leaves no row.
struct RowPollEvents: PollEvents {
    static let table =
        "CREATE TABLE poll_events_test (poll_id TEXT NOT NULL, reason TEXT NOT NULL, result TEXT NOT NULL)"

    func pollsFinalized(_ events: [PollEvent], on executor: any DatabaseExecutor) async throws {
        for event in events {
            let names = event.result.options.map { "\($0.option)=\($0.names.joined(separator: ","))" }
            try await executor.execute(
                "INSERT INTO poll_events_test (poll_id, reason, result) VALUES ($1, $2, $3)",
                [SQLValue(event.id), .text(event.reason.rawValue), .text(names.joined(separator: ";"))]
            )
        }
    }

    func pollEventsCommitted() {}

    static func rows(_ db: any DatabaseExecutor) async throws -> [(poll: String, reason: String, result: String)] {
        try await db.query("SELECT poll_id, reason, result FROM poll_events_test").map {
            (try $0.string("poll_id"), try $0.string("reason"), try $0.string("result"))
        }
    }
}

/// One Herald instance's Polls and Live Activities over a database: the services, the queue and
/// a worker that runs due jobs when asked, sending to an in-memory APNs.
struct PollInstance {
    static let topic = "com.example.polls"
    static let logger = Logger(label: "herald.polls.test", level: .error, handler: RecordingLogHandler())

    let polls: PollService
    let activities: LiveActivityService
    let queue: JobQueue
    let worker: JobWorker
    let activityEvents: RecordedActivityEvents

    init(database: any Database, clients: APNSClientProvider, clock: ManualClock, owner: String) {
        activityEvents = RecordedActivityEvents()
        let jobs = LiveActivityJobs(
            store: LiveActivityStore(database: database),
            users: NoDirectory(),
            clients: clients,
            channels: FakeChannels(),
            clock: clock,
            logger: Self.logger,
            metrics: MetricsRegistry(),
            events: activityEvents
        )
        activities = LiveActivityService(jobs: jobs)
        polls = PollService(
            store: PollStore(database: database),
            liveActivities: activities,
            clock: clock,
            events: RowPollEvents(),
            logger: Self.logger
        )
        var handlers = JobHandlers()
        jobs.register(on: &handlers)
        polls.register(on: &handlers)
        queue = JobQueue(database: database, handlers: handlers, clock: clock, metrics: MetricsRegistry())
        jobs.attach(queue)
        polls.attach(queue)
        worker = JobWorker(
            queue: queue,
            configuration: JobWorkerConfiguration(concurrency: 4, batchSize: 16, lease: 120),
            owner: owner,
            logger: Self.logger
        )
    }

    /// Registers a push-to-start token for each user, so a poll's activity can start for them.
    func registerPushToStart(_ users: [String]) async throws {
        for (index, user) in users.enumerated() {
            let token = String(format: "%064x", index + 1)
            let input = try LiveActivityInput.parsePushToStart(
                Array(#"{"app": "\#(Self.topic)", "attributes_type": "PollAttributes", "token": "\#(token)"}"#.utf8)
            )
            _ = try await activities.register(input, userID: user)
        }
    }
}

/// A fresh database of `backend` with the Polls and Live Activities tables, an in-memory APNs and
/// `instances` Herald instances on it (each with its own database handle on PostgreSQL).
func withPolls(
    _ backend: Backend,
    clock: ManualClock,
    instances count: Int = 1,
    _ body: ([PollInstance], any Database, InMemoryAPNs) async throws -> Void
) async throws {
    try await withDatabase(backend, poolSize: 4) { db, test in
        try await Migrator.migrate(
            db,
            JobMigrations.all + LiveActivityMigrations.all + PollMigrations.all,
            logger: PollInstance.logger
        )
        try await db.execute(RowPollEvents.table)
        let key = try APNSSigningKey(keyID: "POLLKEY001", teamID: "POLLTEAM01", privateKey: P256PrivateKey())
        let apns = InMemoryAPNs(clock: clock)
        let clients = apns.clients(bundleID: PollInstance.topic, key: key, retryPolicy: .never)
        var handles: [any Database] = [db]
        // SQLite in memory is one database per handle: the instances share it there.
        if backend == .postgres {
            for _ in 1..<max(count, 1) { handles.append(try await test.open()) }
        }
        let instances = (0..<count).map { index in
            PollInstance(
                database: handles[min(index, handles.count - 1)],
                clients: clients,
                clock: clock,
                owner: "polls-\(index)"
            )
        }
        do {
            try await body(instances, db, apns)
        } catch {
            await clients.shutdown()
            for handle in handles.dropFirst() { await handle.close() }
            throw error
        }
        await clients.shutdown()
        for handle in handles.dropFirst() { await handle.close() }
    }
}

/// A create body with `members` members (`u1`…), a Live Activity unless `liveActivity` is false.
func createBody(
    members: Int = 3,
    host: String? = "u1",
    closesAt: Int64? = nil,
    liveActivity: Bool = true
) -> [UInt8] {
    var fields = [
        #""app": "\#(PollInstance.topic)""#,
        #""question": "Dinner at 8?""#,
        #""options": ["accept", "decline"]"#,
        #""members": ["#
            + (1...members).map { #"{"user_id": "u\#($0)", "name": "Name \#($0)"}"# }.joined(separator: ", ")
            + "]",
    ]
    if let host { fields.append(#""host_user_id": "\#(host)""#) }
    if let closesAt { fields.append(#""closes_at": \#(closesAt)"#) }
    if liveActivity {
        fields.append(
            #""live_activity": {"attributes_type": "PollAttributes", "attributes": {"title": "Dinner"}, "#
                + #""content_state": {"emoji": "🍝"}, "alert": {"title": "Dinner?", "body": "Vote now"}}"#
        )
    }
    return Array(("{" + fields.joined(separator: ", ") + "}").utf8)
}
