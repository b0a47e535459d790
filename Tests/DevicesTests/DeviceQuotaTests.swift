import APNs
import DatabaseTestSupport
import Devices
import Foundation
import HeraldCore
import Storage
import Synchronization
import Testing

/// Records invalidations and reassignments, each written with the transaction it is given.
final class QuotaEvents: DeviceEvents {
    let invalidated = Mutex<[DeviceInvalidatedEvent]>([])
    let reassigned = Mutex<[DeviceReassignedEvent]>([])
    let commits = Mutex(0)

    func devicesInvalidated(_ events: [DeviceInvalidatedEvent], on executor: any DatabaseExecutor) async throws {
        invalidated.withLock { $0 += events }
    }

    func devicesReassigned(_ events: [DeviceReassignedEvent], on executor: any DatabaseExecutor) async throws {
        reassigned.withLock { $0 += events }
    }

    func invalidationsCommitted() {
        commits.withLock { $0 += 1 }
    }
}

@Suite("Devices: the per-user quota, reassignments and owned deletes on every backend")
struct DeviceQuotaTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    func withStore(
        _ backend: Backend,
        maximum: Int,
        poolSize: Int = 2,
        _ body: (DeviceStore, QuotaEvents, MetricsRegistry) async throws -> Void
    ) async throws {
        try await withDatabase(backend, poolSize: poolSize) { db, _ in
            try await Migrator.migrate(db, DeviceMigrations.all, logger: quietLogger)
            let events = QuotaEvents()
            let metrics = MetricsRegistry()
            let store = DeviceStore(database: db, events: events, metrics: metrics, maximumDevicesPerUser: maximum)
            try await body(store, events, metrics)
        }
    }

    func active(_ store: DeviceStore, user: String) async throws -> [String] {
        try await store.list(
            DeviceListQuery(app: app, environment: .production, userID: user, status: .active, limit: 100)
        ).items.map(\.token)
    }

    @Test(
        "one device past the quota evicts the least recently registered, never the new one",
        arguments: Backend.allCases
    )
    func evictsOldest(backend: Backend) async throws {
        try await withStore(backend, maximum: 3) { store, events, metrics in
            for n in 1...3 {
                _ = try await store.register([
                    registration(n, at: start.addingTimeInterval(Double(n)), user: "u1", tags: ["news"])
                ])
            }
            #expect(events.invalidated.withLock { $0 }.isEmpty)
            // Another user's devices and the other environment do not count.
            _ = try await store.register([registration(10, at: start, user: "u2")])
            _ = try await store.register([registration(11, at: start, user: "u1", environment: .sandbox)])

            let fourth = try await store.register([registration(4, at: start.addingTimeInterval(4), user: "u1")])
            #expect(fourth.first?.device.status == .active)
            #expect(try await active(store, user: "u1") == [token(2), token(3), token(4)])
            let evicted = try #require(try await store.device(app: app, environment: .production, token: token(1)))
            #expect(evicted.status == .invalid)
            #expect(evicted.invalidReason == "evicted")
            #expect(evicted.invalidAt == start.addingTimeInterval(4))
            #expect(events.invalidated.withLock { $0 }.map(\.token) == [token(1)])
            #expect(events.invalidated.withLock { $0 }.first?.reason == "evicted")
            #expect(events.commits.withLock { $0 } == 1)
            #expect(metrics.value("herald_devices_invalidated_total", labels: [("reason", "evicted")]) == 1)
            // Its tags left the tag audience.
            let tagged = try await store.activeTokens(
                app: app,
                environment: .production,
                selector: .anyTag(["news"]),
                after: nil,
                limit: 10
            )
            #expect(tagged.tokens == [token(2), token(3)])

            // Re-registering the evicted device (a reinstall) is never refused: it evicts the next oldest.
            let again = try await store.register([registration(1, at: start.addingTimeInterval(5), user: "u1")])
            #expect(again.first?.device.status == .active)
            #expect(try await active(store, user: "u1") == [token(1), token(3), token(4)])
            #expect(try await active(store, user: "u2") == [token(10)])
        }
    }

    @Test(
        "a batch past the quota keeps the newest, and its answers say which were evicted",
        arguments: Backend.allCases
    )
    func batchPastQuota(backend: Backend) async throws {
        try await withStore(backend, maximum: 2) { store, events, _ in
            _ = try await store.register([registration(1, at: start, user: "u1")])
            let results = try await store.register(
                (2...5).map { registration($0, at: start.addingTimeInterval(Double($0)), user: "u1") }
            )
            #expect(try await active(store, user: "u1") == [token(4), token(5)])
            #expect(results.map(\.device.status) == [.invalid, .invalid, .active, .active])
            #expect(results.first?.device.invalidReason == "evicted")
            #expect(Set(events.invalidated.withLock { $0 }.map(\.token)) == [token(1), token(2), token(3)])
        }
    }

    @Test(
        "registrations for one user at once never leave more active devices than the quota",
        arguments: Backend.allCases
    )
    func concurrentRegistrations(backend: Backend) async throws {
        try await withStore(backend, maximum: 5, poolSize: 8) { store, _, _ in
            for n in 1...5 { _ = try await store.register([registration(n, at: start, user: "u1")]) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 6...45 {
                    group.addTask {
                        _ = try await store.register([
                            registration(n, at: start.addingTimeInterval(Double(n)), user: "u1")
                        ])
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await active(store, user: "u1").count == 5)
        }
    }

    @Test(
        "two users swapping tokens at once, both at the quota, both succeed and stay within it",
        arguments: Backend.allCases
    )
    func concurrentSwaps(backend: Backend) async throws {
        try await withStore(backend, maximum: 1, poolSize: 4) { store, _, metrics in
            for round in 0..<3 {
                let (a, b) = (2 * round + 100, 2 * round + 101)
                let at = start.addingTimeInterval(Double(10 * round))
                _ = try await store.register([registration(a, at: at, user: "u1")])
                _ = try await store.register([registration(b, at: at, user: "u2")])
                async let toU1 = store.register([registration(b, at: at.addingTimeInterval(1), user: "u1")])
                async let toU2 = store.register([registration(a, at: at.addingTimeInterval(1), user: "u2")])
                _ = try await (toU1, toU2)
                #expect(try await active(store, user: "u1") == [token(b)])
                #expect(try await active(store, user: "u2") == [token(a)])
            }
            // A transaction PostgreSQL aborted and ran again told the sink twice; it was counted once.
            #expect(metrics.value("herald_device_reassignments_total") == 6)
        }
    }

    @Test("a token that moves to another user is reported, counted and new to its user", arguments: Backend.allCases)
    func reassignment(backend: Backend) async throws {
        try await withStore(backend, maximum: 20) { store, events, metrics in
            _ = try await store.register([registration(1, at: start, user: "u1")])
            _ = try await store.register([registration(2, at: start, user: nil)])
            let same = try await store.register([registration(1, at: start.addingTimeInterval(1), user: "u1")])
            #expect(same.first?.previousUserID == "u1")
            #expect(events.reassigned.withLock { $0 }.isEmpty)

            let moved = try await store.register([registration(1, at: start.addingTimeInterval(2), user: "u2")])
            #expect(moved.first?.created == false)
            #expect(moved.first?.previousUserID == "u1")
            #expect(moved.first?.device.userID == "u2")
            #expect(moved.first?.device.createdAt == start.addingTimeInterval(2), "new to u2")
            #expect(
                events.reassigned.withLock { $0 } == [
                    DeviceReassignedEvent(
                        token: token(1),
                        app: app,
                        environment: .production,
                        fromUserID: "u1",
                        toUserID: "u2"
                    )
                ]
            )
            #expect(metrics.value("herald_device_reassignments_total") == 1)
            #expect(events.commits.withLock { $0 } == 1)

            // A device with no user that a user signs in on is not a move between users.
            let claimed = try await store.register([registration(2, at: start.addingTimeInterval(3), user: "u2")])
            #expect(claimed.first?.previousUserID == nil)
            #expect(events.reassigned.withLock { $0 }.count == 1)
            #expect(try await active(store, user: "u1").isEmpty)
            #expect(try await active(store, user: "u2") == [token(1), token(2)])
        }
    }

    @Test(
        "a delete for an owner removes only that owner's device, and answers the same otherwise",
        arguments: Backend.allCases
    )
    func ownedDelete(backend: Backend) async throws {
        try await withStore(backend, maximum: 20) { store, _, _ in
            _ = try await store.register([registration(1, at: start, user: "u1", tags: ["news"])])
            #expect(try await store.delete(app: app, environment: .production, token: token(1), ownedBy: "u2") == false)
            #expect(try await store.delete(app: app, environment: .production, token: token(9), ownedBy: "u2") == false)
            #expect(try await store.device(app: app, environment: .production, token: token(1))?.tags == ["news"])
            #expect(try await store.delete(app: app, environment: .production, token: token(1), ownedBy: "u1"))
            #expect(try await store.device(app: app, environment: .production, token: token(1)) == nil)
        }
    }
}
