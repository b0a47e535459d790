import APNs
import DatabaseTestSupport
import Devices
import Foundation
import HeraldCore
import Storage
import Testing

let quietLogger = Logger(label: "herald.devices.test", level: .error, handler: RecordingLogHandler())
let app = "com.example.devices"

/// A token of 64 hex characters made from `n`.
func token(_ n: Int) -> String {
    String(format: "%064x", n)
}

/// A fresh database of `backend` with the registry's tables.
func withDevices(_ backend: Backend, _ body: (DeviceStore, any Database) async throws -> Void) async throws {
    try await withDatabase(backend, poolSize: 2) { db, _ in
        try await Migrator.migrate(db, DeviceMigrations.all, logger: quietLogger)
        try await body(DeviceStore(database: db, metrics: MetricsRegistry()), db)
    }
}

func registration(
    _ n: Int,
    at time: Date,
    user: String? = nil,
    tags: [String] = [],
    environment: APNSEnvironment = .production
) -> DeviceRegistration {
    DeviceRegistration(
        token: token(n),
        app: app,
        environment: environment,
        userID: user,
        tags: tags,
        locale: "en_GB",
        timezone: "Europe/London",
        appVersion: "1.2.3",
        platform: .ios,
        registeredAt: time
    )
}

func invalidation(_ n: Int, reason: String = "Unregistered", at time: Date, recorded: Date) -> DeviceInvalidation {
    DeviceInvalidation(token: token(n), reason: reason, invalidAt: time, recordedAt: recorded, notificationID: nil)
}

@Suite("Devices: the registry store on every backend")
struct DeviceStoreTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("register creates, then replaces; get and delete", arguments: Backend.allCases)
    func registerReadDelete(backend: Backend) async throws {
        try await withDevices(backend) { store, _ in
            let first = try await store.register([registration(1, at: start, user: "u1", tags: ["a", "b"])])
            #expect(first.map(\.created) == [true])
            #expect(first[0].device.tags == ["a", "b"])
            #expect(first[0].device.status == .active)
            #expect(first[0].device.lastRegisteredAt == start)

            var again = registration(1, at: start.addingTimeInterval(60), tags: ["c"])
            again.locale = nil
            let second = try await store.register([again])
            #expect(second.map(\.created) == [false])
            let device = try #require(try await store.device(app: app, environment: .production, token: token(1)))
            #expect(device.userID == nil)
            #expect(device.tags == ["c"])
            #expect(device.locale == nil)
            #expect(device.createdAt == start)
            #expect(device.updatedAt == start.addingTimeInterval(60))
            #expect(device.lastRegisteredAt == start.addingTimeInterval(60))
            #expect(try await store.device(app: app, environment: .sandbox, token: token(1)) == nil)

            #expect(try await store.delete(app: app, environment: .production, token: token(1)))
            #expect(!(try await store.delete(app: app, environment: .production, token: token(1))))
            #expect(try await store.device(app: app, environment: .production, token: token(1)) == nil)
            let tagged = try await store.activeTokens(
                app: app,
                environment: .production,
                selector: .anyTag(["c"]),
                after: nil,
                limit: 10
            )
            #expect(tagged.tokens.isEmpty)
        }
    }
}
