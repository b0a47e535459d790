import APNs
import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import Storage
import Testing

@testable import LiveActivities

/// The Live Activities store on every backend: the push-to-start dead-token rule, timestamps that
/// only go forward, one transition per state change, and keyset pages.
@Suite("LiveActivities: the store on every backend")
struct LiveActivityStoreTests {
    let t = Date(timeIntervalSince1970: 1_800_000_000)
    static let logger = Logger(label: "herald.live-activities.test", level: .error, handler: RecordingLogHandler())

    func withStore(_ backend: Backend, _ body: (LiveActivityStore) async throws -> Void) async throws {
        try await withDatabase(backend, poolSize: 2) { db, _ in
            try await Migrator.migrate(db, LiveActivityMigrations.all, logger: Self.logger)
            try await body(LiveActivityStore(database: db))
        }
    }

    func register(_ store: LiveActivityStore, _ token: String, at time: Date) async throws -> PushToStartToken {
        try await store.register(
            PushToStartRegistration(
                app: "com.example.app",
                environment: .production,
                attributesType: "T",
                token: token,
                userID: "u1",
                registeredAt: time
            )
        ).0
    }

    func invalidate(_ store: LiveActivityStore, _ token: String, at time: Date) async throws {
        try await store.invalidatePushToStart(
            app: "com.example.app",
            environment: .production,
            attributesType: "T",
            token: token,
            reason: "Unregistered",
            at: time,
            now: time
        )
    }

    func live(_ store: LiveActivityStore) async throws -> [String] {
        try await store.pushToStartTokens(
            app: "com.example.app",
            environment: .production,
            attributesType: "T",
            users: ["u1"]
        )
        .map(\.token)
    }

    @Test(
        "a 410 at T invalidates a push-to-start token; a registration at or before T does not revive it, one after does",
        arguments: Backend.allCases
    )
    func deadTokenRule(backend: Backend) async throws {
        try await withStore(backend) { store in
            let a = String(repeating: "a", count: 64)
            let b = String(repeating: "b", count: 64)
            #expect(try await register(store, a, at: t.addingTimeInterval(-60)).status == "active")
            #expect(try await register(store, b, at: t.addingTimeInterval(60)).status == "active")
            try await invalidate(store, a, at: t)
            // b registered after the 410's time: it stays active.
            try await invalidate(store, b, at: t)
            #expect(try await live(store) == [b])
            let given = try await store.livePushToStartTokens(
                app: "com.example.app",
                environment: .production,
                attributesType: "T",
                tokens: [a, b]
            )
            #expect(given == [b])
            #expect(try await register(store, a, at: t).status == "invalid", "a retry stamped at T is stale")
            #expect(try await register(store, a, at: t.addingTimeInterval(1)).status == "active")
            #expect(try await live(store).sorted() == [a, b])
        }
    }

    func activity(_ id: UUID, at time: Date, state: LiveActivityState = .started, users: [String] = []) -> LiveActivity
    {
        let request = LiveActivityRequest(
            attributesType: "T",
            attributes: .object([:]),
            contentState: .object(["step": .integer(0)]),
            alert: LiveActivityAlert(title: "t", body: "b"),
            audience: .users(users.isEmpty ? ["u1"] : users)
        )
        return LiveActivity(
            id: id,
            app: "com.example.app",
            environment: .production,
            attributesType: "T",
            request: request,
            requestHash: "h",
            state: state,
            failureReason: nil,
            channelID: nil,
            channelCreated: false,
            contentState: request.contentState,
            lastUpdate: nil,
            lastTimestamp: 0,
            startAt: nil,
            endAt: nil,
            startedAt: nil,
            endedAt: nil,
            createdAt: time,
            updatedAt: time,
            users: users
        )
    }

    @Test(
        "accepted updates get strictly increasing timestamps, in a batch too; a missing or unstarted activity fails alone",
        arguments: Backend.allCases
    )
    func timestamps(backend: Backend) async throws {
        try await withDatabase(backend, poolSize: 2) { db, _ in
            try await Migrator.migrate(db, LiveActivityMigrations.all + JobMigrations.all, logger: Self.logger)
            let store = LiveActivityStore(database: db)
            let queue = JobQueue(database: db, handlers: JobHandlers())
            let id = UUID()
            let scheduled = UUID()
            _ = try await db.transaction { tx in
                _ = try await store.insert(activity(id, at: t), on: tx)
                _ = try await store.insert(activity(scheduled, at: t, state: .scheduled), on: tx)
            }
            func update(
                _ id: UUID,
                _ event: LiveActivityUpdate.Event = .update,
                step: Int64 = 1
            ) -> LiveActivityAcceptance {
                LiveActivityAcceptance(
                    id: id,
                    update: LiveActivityUpdate(event: event, contentState: .object(["step": .integer(step)])),
                    keepContent: false
                )
            }
            for now in [t, t, t.addingTimeInterval(-100), t.addingTimeInterval(10)] {
                let results = try await LiveActivityAcceptor.accept([update(id)], store: store, queue: queue, now: now)
                #expect(try results.map { try $0.get() } == [LiveActivityRouteCounts(pending: 1)])
            }
            let base = EpochTime.seconds(t)
            #expect(try await store.activity(id)?.lastTimestamp == base + 10)

            // One batch: three for the activity (the last an end), one for no activity, one for
            // an activity not started yet, and one after the end.
            let batch = [
                update(id, step: 2), update(UUID()), update(id, step: 3), update(scheduled),
                update(id, .end, step: 4), update(id, step: 5),
            ]
            let results = try await LiveActivityAcceptor.accept(batch, store: store, queue: queue, now: t)
            #expect(results.map { (try? $0.get()) != nil } == [true, false, true, false, true, false])
            #expect((results[1].failureValue as? LiveActivityError)?.code == "not_found")
            #expect((results[3].failureValue as? LiveActivityError)?.code == "not_started")
            #expect((results[5].failureValue as? LiveActivityError)?.code == "not_started")

            let stored = try #require(try await store.activity(id))
            #expect(stored.state == .ended)
            #expect(stored.endedAt == t)
            #expect(stored.lastTimestamp == base + 13)
            #expect(stored.contentState == .object(["step": .integer(4)]))
            #expect(stored.lastUpdate?.event == .end)
            let sent = try await db.query("SELECT payload FROM jobs WHERE kind = $1", [.text(LiveActivityJobKind.send)])
                .map { try LiveActivitySendJob(json: try LiveActivityStore.value(try $0.string("payload"))) }
            // One job a batch: the four single updates, then the three accepted of the last batch, in
            // the order they were stamped.
            #expect(sent.map(\.sends.count).sorted() == [1, 1, 1, 1, 3])
            #expect(
                sent.flatMap(\.sends).map(\.update.timestamp).sorted() == [0, 1, 2, 10, 11, 12, 13].map { base + $0 }
            )
            #expect(
                sent.first { $0.sends.count == 3 }?.sends.map(\.update.timestamp) == [11, 12, 13].map { base + $0 }
            )
            #expect(try await store.activity(scheduled)?.lastTimestamp == 0)
        }
    }

    @Test("a state changes once: a second transition from the same state does nothing", arguments: Backend.allCases)
    func transitions(backend: Backend) async throws {
        try await withStore(backend) { store in
            let id = UUID()
            _ = try await store.database.transaction { tx in
                try await store.insert(activity(id, at: t, state: .scheduled), on: tx)
            }
            let moves = try await store.database.transaction { tx in
                [
                    try await store.transition(id, from: [.scheduled], to: .started, at: t, on: tx),
                    try await store.transition(id, from: [.scheduled], to: .started, at: t, on: tx),
                    try await store.transition(id, from: [.scheduled], to: .cancelled, at: t, on: tx),
                ]
            }
            #expect(moves == [true, false, false])
            let started = try #require(try await store.activity(id))
            #expect(started.state == .started)
            #expect(started.startedAt == t)
        }
    }

    @Test(
        "deliveries recorded in the same millisecond list newest first, in the order they happened",
        arguments: Backend.allCases
    )
    func deliveriesInOneMillisecond(backend: Backend) async throws {
        try await withStore(backend) { store in
            let id = UUID()
            // A dead update token's 410 and the silent push that replaced it, in one write, many
            // times over: with random row ids about half of them would list in the wrong order.
            let routes: [LiveActivityRoute] = (0..<40).map { $0 % 2 == 0 ? .updateToken : .silent }
            let deliveries = routes.enumerated().map { index, route in
                LiveActivityDelivery(
                    at: t,
                    event: "update",
                    route: route,
                    token: String(format: "%08x", index),
                    status: route == .updateToken ? 410 : 200,
                    reason: nil,
                    apnsID: nil
                )
            }
            try await store.record(deliveries, of: id)
            let listed = try await store.deliveries(of: id)
            #expect(listed.map(\.token) == deliveries.reversed().map(\.token))
            #expect(listed.first?.route == .silent)
        }
    }

    @Test("activities list newest first in keyset pages, by user and state", arguments: Backend.allCases)
    func listing(backend: Backend) async throws {
        try await withStore(backend) { store in
            var ids: [UUID] = []
            for index in 0..<5 {
                let id = UUID()
                ids.append(id)
                let user = index % 2 == 0 ? "even" : "odd"
                _ = try await store.database.transaction { tx in
                    try await store.insert(activity(id, at: t.addingTimeInterval(Double(index)), users: [user]), on: tx)
                }
            }
            var seen: [UUID] = []
            var cursor: String?
            repeat {
                let page = try await store.list(LiveActivityStore.Filter(), limit: 2, cursor: cursor)
                #expect(page.items.count <= 2)
                seen += page.items.map(\.id)
                cursor = page.next
            } while cursor != nil
            #expect(seen == ids.reversed())
            let even = try await store.list(LiveActivityStore.Filter(userID: "even"), limit: 10, cursor: nil)
            #expect(even.items.map(\.id) == [ids[4], ids[2], ids[0]])
            #expect(even.items.first?.users == ["even"])
            #expect(try await store.list(LiveActivityStore.Filter(state: .ended), limit: 10, cursor: nil).items.isEmpty)
        }
    }
}

extension Result {
    /// The error of a failure, `nil` for a success.
    var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
