import APNs
import DatabaseTestSupport
import Devices
import Foundation
import HeraldCore
import Storage
import Synchronization
import Testing

/// Records the events it hears, and writes each into `device_events` with the transaction it is
/// given, so a test can see that they commit (or roll back) with the change.
final class RecordingEvents: DeviceEvents {
    let events = Mutex<[DeviceInvalidatedEvent]>([])
    let failing: Bool

    init(failing: Bool = false) {
        self.failing = failing
    }

    static let table =
        "CREATE TABLE device_events (token TEXT NOT NULL, reason TEXT NOT NULL, invalid_at BIGINT NOT NULL)"

    func devicesInvalidated(_ events: [DeviceInvalidatedEvent], on executor: any DatabaseExecutor) async throws {
        for event in events {
            try await executor.execute(
                "INSERT INTO device_events (token, reason, invalid_at) VALUES ($1, $2, $3)",
                [.text(event.token), .text(event.reason), SQLValue(event.invalidAt)]
            )
        }
        if failing { throw DatabaseError(code: .queryFailed, message: "the event sink refused") }
        self.events.withLock { $0 += events }
    }
}

@Suite("Devices: Apple's dead-token rule on every backend")
struct DeadTokenRuleTests {
    let t = Date(timeIntervalSince1970: 1_800_000_000)

    func invalidate(
        _ store: DeviceStore,
        _ db: any Database,
        _ items: [DeviceInvalidation]
    ) async throws -> [DeviceInvalidatedEvent] {
        try await db.transaction { tx in
            try await store.invalidate(items, app: app, environment: .production, on: tx)
        }
    }

    func status(_ store: DeviceStore, _ n: Int) async throws -> Device? {
        try await store.device(app: app, environment: .production, token: token(n))
    }

    @Test(
        "a 410 at T invalidates; a registration stamped at or before T does not revive, one after T does",
        arguments: Backend.allCases
    )
    func registrationsBeforeAndAfterT(backend: Backend) async throws {
        try await withDevices(backend) { store, db in
            _ = try await store.register([registration(1, at: t.addingTimeInterval(-3_600), tags: ["news"])])
            let events = try await invalidate(
                store,
                db,
                [invalidation(1, at: t, recorded: t.addingTimeInterval(5))]
            )
            #expect(events.map(\.token) == [token(1)])
            #expect(events.first?.invalidAt == t)
            var device = try #require(try await status(store, 1))
            #expect(device.status == .invalid)
            #expect(device.invalidReason == "Unregistered")
            #expect(device.invalidAt == t)
            #expect(device.invalidRecordedAt == t.addingTimeInterval(5))
            let none = try await store.activeTokens(
                app: app,
                environment: .production,
                selector: .all,
                after: nil,
                limit: 10
            )
            #expect(none.tokens.isEmpty)

            // A stale retry, stamped before T, and one stamped exactly at T: still invalid.
            for stamp in [t.addingTimeInterval(-60), t] {
                let stale = try await store.register([registration(1, at: stamp, tags: ["sports"])])
                #expect(stale.first?.created == false)
                #expect(stale.first?.device.status == .invalid)
                #expect(stale.first?.device.invalidAt == t)
                #expect(stale.first?.device.tags == ["sports"])
            }
            // Stamped after T: active again, the invalidation cleared.
            let fresh = try await store.register([registration(1, at: t.addingTimeInterval(1), tags: ["news"])])
            device = try #require(fresh.first?.device)
            #expect(device.status == .active)
            #expect(device.invalidReason == nil)
            #expect(device.invalidAt == nil)
            #expect(device.lastRegisteredAt == t.addingTimeInterval(1))
            let back = try await store.activeTokens(
                app: app,
                environment: .production,
                selector: .anyTag(["news"]),
                after: nil,
                limit: 10
            )
            #expect(back.tokens == [token(1)])
        }
    }

    @Test(
        "a 410 whose T is older than the last registration leaves the device active and reports nothing",
        arguments: Backend.allCases
    )
    func staleAnswer(backend: Backend) async throws {
        try await withDevices(backend) { store, db in
            _ = try await store.register([registration(2, at: t)])
            let events = try await invalidate(
                store,
                db,
                [invalidation(2, at: t.addingTimeInterval(-1), recorded: t.addingTimeInterval(10))]
            )
            #expect(events.isEmpty)
            #expect(try await status(store, 2)?.status == .active)
            let dead = try await store.deadTokens(app: nil, environment: nil, since: nil, limit: 10, cursor: nil)
            #expect(dead.items.isEmpty)
        }
    }

    @Test(
        "BadDeviceToken and DeviceTokenNotForTopic invalidate at the answer's time; unknown tokens become invalid devices",
        arguments: Backend.allCases
    )
    func otherReasons(backend: Backend) async throws {
        try await withDevices(backend) { store, db in
            _ = try await store.register([registration(3, at: t), registration(4, at: t)])
            let answered = t.addingTimeInterval(30)
            let events = try await invalidate(
                store,
                db,
                [
                    invalidation(3, reason: "BadDeviceToken", at: answered, recorded: answered),
                    invalidation(4, reason: "DeviceTokenNotForTopic", at: answered, recorded: answered),
                    invalidation(5, reason: "Unregistered", at: t, recorded: answered),
                ]
            )
            #expect(Set(events.map(\.token)) == [token(3), token(4), token(5)])
            #expect(try await status(store, 3)?.invalidReason == "BadDeviceToken")
            #expect(try await status(store, 4)?.invalidReason == "DeviceTokenNotForTopic")
            let unknown = try #require(try await status(store, 5))
            #expect(unknown.status == .invalid)
            #expect(unknown.lastRegisteredAt == nil)
            #expect(unknown.tags.isEmpty)

            // Already invalid: recorded again (a later answer), not reported again.
            let again = try await invalidate(
                store,
                db,
                [invalidation(3, reason: "BadDeviceToken", at: answered.addingTimeInterval(60), recorded: answered)]
            )
            #expect(again.isEmpty)
            #expect(try await status(store, 3)?.invalidAt == answered.addingTimeInterval(60))

            let dead = try await store.deadTokens(app: app, environment: .production, since: nil, limit: 2, cursor: nil)
            #expect(dead.items.count == 2)
            let rest = try await store.deadTokens(
                app: app,
                environment: .production,
                since: nil,
                limit: 2,
                cursor: dead.nextCursor.flatMap(DeadTokenCursor.init)
            )
            #expect(rest.nextCursor == nil)
            #expect(Set((dead.items + rest.items).map(\.token)) == [token(3), token(4), token(5)])
        }
    }

    @Test(
        "invalidation events are written in the invalidating transaction, and roll back with it",
        arguments: Backend.allCases
    )
    func eventsInTheTransaction(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            try await Migrator.migrate(db, DeviceMigrations.all, logger: quietLogger)
            try await db.execute(RecordingEvents.table)
            let sink = RecordingEvents()
            let store = DeviceStore(database: db, events: sink, metrics: MetricsRegistry())
            _ = try await store.register([registration(6, at: t)])
            _ = try await invalidate(store, db, [invalidation(6, at: t.addingTimeInterval(1), recorded: t)])
            #expect(sink.events.withLock { $0.map(\.token) } == [token(6)])
            #expect(sink.events.withLock { $0.first?.app } == app)
            #expect(sink.events.withLock { $0.first?.environment } == .production)
            let written = try await db.query("SELECT token, reason FROM device_events")
            #expect(try written.map { try $0.string("token") } == [token(6)])

            let refusing = DeviceStore(database: db, events: RecordingEvents(failing: true), metrics: MetricsRegistry())
            _ = try await refusing.register([registration(7, at: t)])
            await #expect(throws: DatabaseError.self) {
                _ = try await invalidate(refusing, db, [invalidation(7, at: t.addingTimeInterval(1), recorded: t)])
            }
            #expect(try await status(refusing, 7)?.status == .active)
            #expect(try await db.query("SELECT token FROM device_events").count == 1)
        }
    }

    @Test(
        "migration 7 moves dead_tokens rows into devices as invalid devices and drops the table",
        arguments: Backend.allCases
    )
    func migratesDeadTokens(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            try await db.executeScript(
                """
                CREATE TABLE dead_tokens (
                    app TEXT NOT NULL, environment TEXT NOT NULL, token TEXT NOT NULL, reason TEXT NOT NULL,
                    invalid_at BIGINT, recorded_at BIGINT NOT NULL, notification_id TEXT,
                    PRIMARY KEY (app, environment, token)
                )
                """
            )
            let notification = UUID()
            try await db.execute(
                """
                INSERT INTO dead_tokens (app, environment, token, reason, invalid_at, recorded_at, notification_id)
                VALUES ($1, 'production', $2, 'Unregistered', $3, $4, $5), ($1, 'sandbox', $6, 'BadDeviceToken', NULL, $4, NULL)
                """,
                [
                    .text(app), .text(token(8)), SQLValue(t), SQLValue(t.addingTimeInterval(9)), SQLValue(notification),
                    .text(token(9)),
                ]
            )
            try await Migrator.migrate(db, DeviceMigrations.all, logger: quietLogger)
            let store = DeviceStore(database: db, metrics: MetricsRegistry())
            let dead = try await store.deadTokens(app: app, environment: nil, since: nil, limit: 10, cursor: nil)
            #expect(dead.items.count == 2)
            let moved = try #require(dead.items.first { $0.token == token(8) })
            #expect(moved.reason == "Unregistered")
            #expect(moved.invalidAt == t)
            #expect(moved.recordedAt == t.addingTimeInterval(9))
            #expect(moved.notificationID == notification)
            let sandbox = try #require(dead.items.first { $0.token == token(9) })
            #expect(sandbox.environment == .sandbox)
            #expect(sandbox.invalidAt == nil)
            #expect(try await store.device(app: app, environment: .sandbox, token: token(9))?.status == .invalid)
            await #expect(throws: (any Error).self) { _ = try await db.query("SELECT COUNT(*) AS n FROM dead_tokens") }
        }
    }
}
