import APNs
import DatabaseTestSupport
import Foundation
import HTTPRouting
import HTTPServer
import HeraldAPI
import HeraldCore
import HeraldCrypto
import HeraldFeature
import Jobs
import Storage
import Testing
import Wake

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `/v1/wake-schedules` over the real HTTP server, on every backend: the lifecycle and every
/// input limit answered with its 4xx.
@Suite("Wake schedules API over HTTP")
struct WakeAPITests {
    static let key = "test-key-0123456789abcdef"
    static let app = "com.example.wakeapi"

    static func with(
        _ backend: Backend,
        maximumSchedules: Int = WakeLimits.maximumSchedules,
        _ body: (WebhookAPITests.Harness) async throws -> Void
    ) async throws {
        let quiet = Logger(label: "test", level: .error, handler: RecordingLogHandler())
        let signing = try APNSSigningKey(keyID: "WAKEAPI001", teamID: "WAKETEAM01", privateKey: P256PrivateKey())
        try await withDatabase(backend, poolSize: 4) { db, _ in
            try await Migrator.migrate(db, HeraldSchema.migrations, logger: quiet)
            var router = Router()
            let queue = JobQueue(
                database: db,
                handlers: JobHandlers(),
                clock: ManualClock(),
                metrics: MetricsRegistry()
            )
            let service = WakeService(
                store: WakeStore(database: db),
                queue: queue,
                apps: [APNSAppConfiguration(bundleID: app, credentials: .token(signing))],
                cloudKitConfigured: false,
                maximumSchedules: maximumSchedules
            )
            try router.register(
                WakeRoutes(service: service).routes,
                machinery: RequestMachinery(
                    authenticators: [.apiKey: APIKeys([key])],
                    idempotency: IdempotencyStore(database: db)
                )
            )
            var http = HTTPServer.Configuration()
            http.host = "127.0.0.1"
            http.port = 0
            let server = HTTPServer(configuration: http, responder: router, logger: quiet, metrics: MetricsRegistry())
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await server.run() }
                let port = try await server.listeningPort()
                do {
                    try await body(WebhookAPITests.Harness(base: "http://127.0.0.1:\(port)"))
                } catch {
                    server.triggerGracefulShutdown()
                    throw error
                }
                server.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }
    }

    static var valid: [String: Any] {
        [
            "name": "hourly", "mode": "apns", "every": "1h", "jitter": "5m", "audience": ["all": true],
            "data": ["kind": "refresh"],
        ]
    }

    @Test("create 201 with Location; list, read with runs, patch, delete 204 then 404", arguments: Backend.allCases)
    func lifecycle(backend: Backend) async throws {
        try await Self.with(backend) { harness in
            let created = try await harness.request("POST", "/v1/wake-schedules", json: Self.valid)
            #expect(created.status == 201)
            let id = try #require(created.json["id"] as? String)
            #expect(created.json["next_run_at"] is String)
            #expect(created.json["every"] as? String == "1h")
            #expect(created.json["jitter"] as? String == "5m")
            #expect(created.json["app"] as? String == Self.app)
            #expect((created.json["audience"] as? [String: Any])?["all"] as? Bool == true)
            #expect((created.json["data"] as? [String: Any])?["kind"] as? String == "refresh")

            let list = try await harness.request("GET", "/v1/wake-schedules?limit=10")
            #expect(list.status == 200)
            #expect((list.json["wake_schedules"] as? [[String: Any]])?.map { $0["id"] as? String } == [id])

            let read = try await harness.request("GET", "/v1/wake-schedules/\(id)")
            #expect(read.status == 200)
            #expect((read.json["runs"] as? [Any])?.isEmpty == true)

            let paused = try await harness.request("PATCH", "/v1/wake-schedules/\(id)", json: ["paused": true])
            #expect(paused.status == 200)
            #expect(paused.json["paused"] as? Bool == true)
            #expect(paused.json["next_run_at"] is NSNull)
            let retimed = try await harness.request(
                "PATCH",
                "/v1/wake-schedules/\(id)",
                json: ["paused": false, "cron": "30 9 * * 1-5", "timezone": "Europe/Berlin", "name": "weekdays"]
            )
            #expect(retimed.status == 200)
            #expect(retimed.json["cron"] as? String == "30 9 * * 1-5")
            #expect(retimed.json["timezone"] as? String == "Europe/Berlin")
            #expect(retimed.json["next_run_at"] is String)
            // Without a timezone a cron schedule reads its times in UTC, and says so.
            var utc = Self.valid
            utc["every"] = nil
            utc["cron"] = "0 6 * * *"
            let daily = try await harness.request("POST", "/v1/wake-schedules", json: utc)
            #expect(daily.status == 201)
            #expect(daily.json["timezone"] as? String == "UTC")
            if let dailyID = daily.json["id"] as? String {
                #expect(try await harness.request("DELETE", "/v1/wake-schedules/\(dailyID)").status == 204)
            }

            #expect(try await harness.request("DELETE", "/v1/wake-schedules/\(id)").status == 204)
            #expect(try await harness.request("GET", "/v1/wake-schedules/\(id)").status == 404)
            #expect(try await harness.request("DELETE", "/v1/wake-schedules/\(id)").status == 404)
        }
    }

    @Test("every limit is a 4xx that names the field", arguments: [Backend.sqliteMemory, .postgres])
    func limits(backend: Backend) async throws {
        try await Self.with(backend, maximumSchedules: 1) { harness in
            var cases: [(String, String, Any?, Int, String)] = [
                ("POST", "/v1/wake-schedules", ["name": "x"], 400, "invalid_mode"),
                ("POST", "/v1/wake-schedules", Self.valid.merging(["every": "5s"]) { $1 }, 400, "invalid_every"),
                ("POST", "/v1/wake-schedules", Self.valid.merging(["jitter": "2h"]) { $1 }, 400, "invalid_jitter"),
                ("POST", "/v1/wake-schedules", Self.valid.merging(["app": "com.other"]) { $1 }, 400, "unknown_app"),
                ("POST", "/v1/wake-schedules", Self.valid.merging(["extra": 1]) { $1 }, 400, "unknown_field"),
                (
                    "POST", "/v1/wake-schedules",
                    Self.valid.merging(["data": ["k": String(repeating: "x", count: 3_000)]]) { $1 }, 413,
                    "data_too_large"
                ),
                (
                    "POST", "/v1/wake-schedules",
                    Self.valid.merging(["audience": ["tokens": (0...10_000).map { String(format: "%064x", $0) }]]) {
                        $1
                    }, 413, "too_many_tokens"
                ),
                (
                    "POST", "/v1/wake-schedules",
                    [
                        "name": "ck", "mode": "cloudkit", "every": "1h",
                        "cloudkit": ["container": "iCloud.x", "environment": "production"],
                    ], 422, "cloudkit_not_configured"
                ),
                ("GET", "/v1/wake-schedules?limit=0", nil, 400, "invalid_limit"),
                ("GET", "/v1/wake-schedules?cursor=nope", nil, 400, "invalid_cursor"),
                ("GET", "/v1/wake-schedules/not-an-id", nil, 404, "not_found"),
                ("PATCH", "/v1/wake-schedules/\(UUID().uuidString)", ["paused": true], 404, "not_found"),
            ]
            for (method, path, body, status, code) in cases {
                let answer = try await harness.request(method, path, json: body)
                #expect(answer.status == status, "\(method) \(path) \(code)")
                #expect(WebhookAPITests.error(answer.json)?["code"] as? String == code, "\(answer.json)")
                #expect((WebhookAPITests.error(answer.json)?["message"] as? String)?.isEmpty == false)
            }
            let created = try await harness.request("POST", "/v1/wake-schedules", json: Self.valid)
            #expect(created.status == 201)
            let id = try #require(created.json["id"] as? String)
            cases = [
                ("POST", "/v1/wake-schedules", Self.valid, 409, "too_many_schedules"),
                ("PATCH", "/v1/wake-schedules/\(id)", ["colour": "red"], 400, "unknown_field"),
                ("PATCH", "/v1/wake-schedules/\(id)", ["jitter": "2h"], 400, "invalid_jitter"),
                ("PATCH", "/v1/wake-schedules/\(id)", [String: Any](), 400, "empty_patch"),
            ]
            for (method, path, body, status, code) in cases {
                let answer = try await harness.request(method, path, json: body)
                #expect(answer.status == status, "\(method) \(path) \(code)")
                #expect(WebhookAPITests.error(answer.json)?["code"] as? String == code, "\(answer.json)")
            }
            #expect(try await harness.request("GET", "/v1/wake-schedules", key: nil).status == 401)
        }
    }
}
