import APNs
import APNsSimulator
import APNsTransport
import AsyncTestSupport
import ClientTokens
import DatabaseTestSupport
import Devices
import Foundation
import HTTPRouting
import HTTPServer
import HeraldAPI
import HeraldCore
import HeraldCrypto
import HeraldFeature
import Jobs
import Notifications
import Storage
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `/v1` over the real HTTP server, with the job worker running and the APNs client sending to
/// the in-process simulator over HTTP/2 + TLS.
@Suite("Notifications API over HTTP")
struct NotificationAPITests {
    static let key = "test-key-0123456789abcdef"
    static let topic = "com.example.api"

    struct Harness {
        let base: String
        let simulator: APNSSimulator
        let queue: JobQueue

        func request(
            _ method: String,
            _ path: String,
            json: Any? = nil,
            key: String? = NotificationAPITests.key
        ) async throws -> (status: Int, json: [String: Any]) {
            var request = URLRequest(url: URL(string: base + path)!)
            request.httpMethod = method
            if let key { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
            if let json {
                request.httpBody = try JSONSerialization.data(withJSONObject: json)
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            }
            let (data, response) = try await URLSession.shared.data(for: request)
            let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
            return ((response as? HTTPURLResponse)?.statusCode ?? 0, object)
        }
    }

    static func tokens(_ count: Int) -> [String] {
        (0..<count).map { String(format: "%064x", $0 + 1) }
    }

    static func with(_ backend: Backend, keys: [String] = [key], _ body: (Harness) async throws -> Void) async throws {
        let signingKey = try APNSSigningKey(keyID: "APITESTK01", teamID: "APITEAM001", privateKey: P256PrivateKey())
        var configuration = APNSSimulator.Configuration()
        configuration.port = 0
        configuration.keys = [APNSSimulatorKey(keyID: signingKey.keyID, publicKey: signingKey.privateKey.publicKey)]
        configuration.teamID = signingKey.teamID
        configuration.topics = [topic]
        configuration.logger = Logger(label: "test.simulator", level: .error)
        let simulator = try APNSSimulator(configuration: configuration)
        let endpoints = APNSEndpoints(all: simulator.endpoint, caFile: simulator.caFile)
        let quiet = Logger(label: "test", level: .error, handler: RecordingLogHandler())
        let metrics = MetricsRegistry()
        let clients = APNSClientProvider(
            apps: [APNSAppConfiguration(bundleID: topic, credentials: .token(signingKey))],
            endpoints: endpoints,
            transports: APNSConnectionPoolFactory(logger: quiet, metrics: metrics),
            clock: SystemClock(),
            logger: quiet
        )
        try await withDatabase(backend, poolSize: 4) { db, _ in
            try await Migrator.migrate(db, HeraldSchema.migrations, logger: quiet)
            let sender = NotificationSender(
                store: NotificationStore(database: db),
                clients: clients,
                metrics: metrics,
                logger: quiet
            )
            var handlers = JobHandlers()
            NotificationService.register(sender, on: &handlers)
            let queue = JobQueue(database: db, handlers: handlers, metrics: metrics)
            let worker = JobWorker(queue: queue, logger: quiet)
            let service = NotificationService(queue: queue, sender: sender, metrics: metrics, logger: quiet)
            var router = Router()
            try router.register(
                NotificationRoutes(service: service).routes,
                machinery: RequestMachinery(
                    authenticators: [.apiKey: APIKeys(keys)],
                    idempotency: IdempotencyStore(database: db)
                )
            )
            // The Devices feature, as herald serve composes it.
            var context = FeatureContext(environment: [:], logger: quiet)
            context.provide(DeviceService(store: sender.store.devices, apps: clients.apps))
            try FeatureAssembly(coreSettings: [], coreMigrations: [], features: [Devices.feature]).register(
                on: &router,
                context: context,
                machinery: RequestMachinery(authenticators: [
                    .apiKey: APIKeys(keys),
                    .clientToken: ClientTokenAuthenticator(ClientTokenConfiguration(), metrics: metrics),
                ])
            )
            var http = HTTPServer.Configuration()
            http.host = "127.0.0.1"
            http.port = 0
            http.maxBodySize = NotificationLimits.maximumBodyBytes
            let server = HTTPServer(configuration: http, responder: router, logger: quiet, metrics: metrics)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await simulator.run() }
                group.addTask { try await server.run() }
                group.addTask { try await worker.run() }
                let port = try await server.listeningPort()
                do {
                    try await body(Harness(base: "http://127.0.0.1:\(port)", simulator: simulator, queue: queue))
                } catch {
                    server.triggerGracefulShutdown()
                    worker.triggerGracefulShutdown()
                    simulator.triggerGracefulShutdown()
                    await clients.shutdown()
                    throw error
                }
                server.triggerGracefulShutdown()
                worker.triggerGracefulShutdown()
                simulator.triggerGracefulShutdown()
                try await group.waitForAll()
                await clients.shutdown()
            }
        }
    }

    @Test("without a key, with a wrong key, or with none configured: 401 saying what to do")
    func unauthorized() async throws {
        try await Self.with(.sqliteMemory) { harness in
            let missing = try await harness.request("GET", "/v1/dead-tokens", key: nil)
            #expect(missing.status == 401)
            #expect(Self.error(missing.json)?["code"] as? String == "missing_api_key")
            let wrong = try await harness.request("GET", "/v1/dead-tokens", key: "test-key-0123456789abcdeX")
            #expect(wrong.status == 401)
            #expect((Self.error(wrong.json)?["message"] as? String)?.contains("HERALD_API_KEYS") == true)
            let right = try await harness.request("GET", "/v1/dead-tokens")
            #expect(right.status == 200)
        }
        try await Self.with(.sqliteMemory, keys: []) { harness in
            let response = try await harness.request("GET", "/v1/notifications/\(UUID())")
            #expect(response.status == 401)
            #expect(Self.error(response.json)?["code"] as? String == "api_keys_unset")
            #expect((Self.error(response.json)?["message"] as? String)?.contains("HERALD_API_KEYS is unset") == true)
        }
    }

    @Test(
        "POST answers 202 once stored, GET shows it sent, DELETE a sent one is 409",
        arguments: [
            Backend.sqliteFile, .postgres,
        ]
    )
    func createReadCancel(_ backend: Backend) async throws {
        try await Self.with(backend) { harness in
            let tokens = Self.tokens(50)
            let created = try await harness.request(
                "POST",
                "/v1/notifications",
                json: ["tokens": tokens, "payload": ["aps": ["alert": "Hi"]]]
            )
            #expect(created.status == 202)
            #expect(created.json["tokens"] as? Int == 50)
            #expect(created.json["status"] as? String == "scheduled")
            #expect(created.json["send_at"] is String)
            let id = try #require(created.json["id"] as? String)
            // The sends run on the job worker after the 202: poll the notification's status.
            try await eventually("the notification to be done", timeout: .seconds(20)) {
                let read = try await harness.request("GET", "/v1/notifications/\(id)?limit=20")
                return read.json["status"] as? String == "done"
            }
            let read = try await harness.request("GET", "/v1/notifications/\(id)?limit=20")
            #expect(read.json["status"] as? String == "done")
            #expect((read.json["counts"] as? [String: Int])?["sent"] == 50)
            let results = try #require(read.json["results"] as? [[String: Any]])
            #expect(results.count == 20)
            #expect(results.allSatisfy { $0["status"] as? String == "sent" && $0["apns_id"] is String })
            let cursor = try #require(read.json["next_cursor"] as? String)
            let page = try await harness.request("GET", "/v1/notifications/\(id)?limit=40&cursor=\(cursor)")
            #expect((page.json["results"] as? [[String: Any]])?.count == 30)
            #expect(page.json["next_cursor"] is NSNull, "present, null: the last page")

            let cancel = try await harness.request("DELETE", "/v1/notifications/\(id)")
            #expect(cancel.status == 409)
            #expect(Self.error(cancel.json)?["code"] as? String == "not_cancellable")
            let unknown = try await harness.request("GET", "/v1/notifications/\(UUID())")
            #expect(unknown.status == 404)
        }
    }

    @Test(
        "a scheduled notification can be cancelled before it is due, its tokens with it",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func cancelScheduled(_ backend: Backend) async throws {
        try await Self.with(backend) { harness in
            let sendAt = Int(Date().timeIntervalSince1970) + 3_600
            let created = try await harness.request(
                "POST",
                "/v1/notifications",
                json: ["tokens": Self.tokens(2), "payload": ["aps": ["alert": "Later"]], "send_at": sendAt]
            )
            #expect(created.status == 202)
            #expect(
                created.json["send_at"] as? String == RFC3339.string(from: Date(timeIntervalSince1970: Double(sendAt)))
            )
            let id = try #require(created.json["id"] as? String)
            let cancel = try await harness.request("DELETE", "/v1/notifications/\(id)")
            #expect(cancel.status == 200)
            #expect(cancel.json["status"] as? String == "cancelled")
            #expect((cancel.json["counts"] as? [String: Int])?["cancelled"] == 2)
            #expect((cancel.json["counts"] as? [String: Int])?["pending"] == 0)
            let read = try await harness.request("GET", "/v1/notifications/\(id)")
            let results = try #require(read.json["results"] as? [[String: Any]])
            #expect(results.map { $0["status"] as? String } == ["cancelled", "cancelled"])
            let again = try await harness.request("DELETE", "/v1/notifications/\(id)")
            #expect(again.status == 409)
        }
    }

    @Test(
        "?wait=true answers 200 with every token's result, dead tokens marked",
        arguments: [
            Backend.sqliteMemory, .postgres,
        ]
    )
    func wait(_ backend: Backend) async throws {
        try await Self.with(backend) { harness in
            let tokens = Self.tokens(10)
            harness.simulator.setToken(APNSSimulatorTokenState(token: tokens[4], unregisteredAt: Date()))
            let response = try await harness.request(
                "POST",
                "/v1/notifications?wait=true",
                json: ["tokens": tokens, "payload": ["aps": ["alert": "Now"]]]
            )
            #expect(response.status == 200)
            #expect(response.json["status"] as? String == "done")
            let results = try #require(response.json["results"] as? [[String: Any]])
            #expect(results.count == 10)
            #expect(results[4]["status"] as? String == "dead")
            #expect(results[4]["reason"] as? String == "Unregistered")
            #expect(results[4]["invalid_at"] is String)
            #expect(results.filter { $0["status"] as? String == "sent" }.count == 9)
            // No job is left behind, of any status (herald_jobs_queue_depth counts none).
            #expect(try await harness.queue.list().isEmpty)
            #expect(try await harness.queue.summary().counts.values.reduce(0, +) == 0)
            let dead = try await harness.request("GET", "/v1/dead-tokens?environment=production")
            let list = try #require(dead.json["dead_tokens"] as? [[String: Any]])
            #expect(list.map { $0["token"] as? String } == [tokens[4]])
        }
    }

    @Test("limits: 10,001 tokens is 413, wait with more than 1,000 tokens or send_at is 400")
    func limits() async throws {
        try await Self.with(.sqliteMemory) { harness in
            let payload = ["aps": ["alert": "x"]]
            let many = try await harness.request(
                "POST",
                "/v1/notifications",
                json: ["tokens": Self.tokens(10_001), "payload": payload]
            )
            #expect(many.status == 413)
            #expect(Self.error(many.json)?["field"] as? String == "tokens")
            #expect((Self.error(many.json)?["message"] as? String)?.contains("at most 10000") == true)
            let wait = try await harness.request(
                "POST",
                "/v1/notifications?wait=true",
                json: ["tokens": Self.tokens(1_001), "payload": payload]
            )
            #expect(wait.status == 400)
            #expect(Self.error(wait.json)?["code"] as? String == "too_many_tokens_to_wait")
            let scheduled = try await harness.request(
                "POST",
                "/v1/notifications?wait=true",
                json: ["tokens": Self.tokens(1), "payload": payload, "send_at": Int(Date().timeIntervalSince1970) + 60]
            )
            #expect(scheduled.status == 400)
            #expect(Self.error(scheduled.json)?["field"] as? String == "send_at")
            let bad = try await harness.request(
                "POST",
                "/v1/notifications",
                json: ["tokens": ["nothex"], "payload": payload]
            )
            #expect(bad.status == 400)
            #expect(Self.error(bad.json)?["field"] as? String == "tokens[0]")
            let limit = try await harness.request("GET", "/v1/notifications/\(UUID())?limit=5000")
            #expect(limit.status == 400)
            #expect(Self.error(limit.json)?["field"] as? String == "limit")
            #expect(harness.simulator.deliveries().isEmpty)
        }
    }

    static func error(_ json: [String: Any]) -> [String: Any]? {
        json["error"] as? [String: Any]
    }
}
