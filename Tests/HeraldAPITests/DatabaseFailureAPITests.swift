import APNs
import APNsSimulator
import APNsTransport
import DatabaseTestSupport
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
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Failures that say what to do: 503 `database_unavailable` with `Retry-After` when the database
/// is busy or unreachable, and `Idempotency-Key` on `POST /v1/notifications`, over the real HTTP
/// server with the middleware `herald serve` uses.
@Suite("Database failures and idempotency over HTTP")
struct DatabaseFailureAPITests {
    static let key = "test-key-0123456789abcdef"
    static let otherKey = "test-key-fedcba9876543210"
    static let topic = "com.example.idempotency"

    struct Reply {
        var status: Int
        var headers: [String: String]
        var body: Data
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
        var error: [String: Any]? { json["error"] as? [String: Any] }
    }

    struct Harness {
        let base: String
        let database: any Database

        func post(
            _ path: String = "/v1/notifications",
            json: Any,
            idempotencyKey: String? = nil,
            key: String = DatabaseFailureAPITests.key
        ) async throws -> Reply {
            try await post(
                path,
                body: try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys]),
                idempotencyKey: idempotencyKey,
                key: key
            )
        }

        func post(
            _ path: String = "/v1/notifications",
            body: Data,
            idempotencyKey: String? = nil,
            key: String = DatabaseFailureAPITests.key
        ) async throws -> Reply {
            var request = URLRequest(url: URL(string: base + path)!)
            request.httpMethod = "POST"
            request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            if let idempotencyKey { request.setValue(idempotencyKey, forHTTPHeaderField: "Idempotency-Key") }
            request.httpBody = body
            let (data, response) = try await URLSession.shared.data(for: request)
            let http = response as? HTTPURLResponse
            var headers: [String: String] = [:]
            for (name, value) in http?.allHeaderFields ?? [:] {
                if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
            }
            return Reply(status: http?.statusCode ?? 0, headers: headers, body: data)
        }

        func count(_ table: String) async throws -> Int64 {
            try await database.query("SELECT count(*) AS n FROM \(table)", [])[0].int("n")
        }
    }

    static func tokens(_ count: Int, from first: Int = 1) -> [String] {
        (0..<count).map { String(format: "%064x", $0 + first) }
    }

    /// Serves `/v1/notifications` on `db` (migrated here) with the APNs simulator behind it.
    static func with(_ db: any Database, _ body: (Harness) async throws -> Void) async throws {
        let signingKey = try APNSSigningKey(keyID: "IDEMTESTK1", teamID: "IDEMTEAM01", privateKey: P256PrivateKey())
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
        let service = NotificationService(queue: queue, sender: sender, metrics: metrics, logger: quiet)
        var router = Router()
        try router.register(
            NotificationRoutes(service: service).routes,
            machinery: RequestMachinery(
                authenticators: [.apiKey: APIKeys([key, otherKey])],
                idempotency: IdempotencyStore(database: db)
            )
        )
        var http = HTTPServer.Configuration()
        http.host = "127.0.0.1"
        http.port = 0
        let server = HTTPServer(
            configuration: http,
            responder: router,
            middleware: HTTPServer.defaultMiddleware(logger: quiet, metrics: metrics)
                + [DatabaseUnavailableMiddleware(logger: quiet)],
            logger: quiet,
            metrics: metrics
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await simulator.run() }
            group.addTask { try await server.run() }
            let port = try await server.listeningPort()
            do {
                try await body(Harness(base: "http://127.0.0.1:\(port)", database: db))
            } catch {
                server.triggerGracefulShutdown()
                simulator.triggerGracefulShutdown()
                await clients.shutdown()
                throw error
            }
            server.triggerGracefulShutdown()
            simulator.triggerGracefulShutdown()
            try await group.waitForAll()
            await clients.shutdown()
        }
    }

    // MARK: 503 database_unavailable

    static func expectUnavailable(_ reply: Reply, retryAfter: String, sourceLocation: SourceLocation = #_sourceLocation)
    {
        #expect(reply.status == 503, sourceLocation: sourceLocation)
        #expect(reply.headers["retry-after"] == retryAfter, sourceLocation: sourceLocation)
        #expect(reply.error?["code"] as? String == "database_unavailable", sourceLocation: sourceLocation)
        #expect((reply.error?["message"] as? String)?.contains("retry") == true, sourceLocation: sourceLocation)
    }

    @Test("SQLite busy past its timeout (another connection holds the write lock): 503 with Retry-After")
    func sqliteBusy() async throws {
        try await withDatabase(.sqliteFile) { db, test in
            try await Self.with(db) { harness in
                let other = try await test.open()
                let holder = HeldTransaction(other, statement: "DELETE FROM notifications")
                await holder.start()
                let reply = try await harness.post(json: ["tokens": Self.tokens(1), "payload": ["aps": ["alert": "x"]]])
                Self.expectUnavailable(reply, retryAfter: "1")
                try await holder.release()
                await other.close()
                #expect(try await harness.count("notifications") == 0)
            }
        }
    }

    @Test("PostgreSQL: every pooled connection busy past the acquire deadline: 503 with Retry-After")
    func postgresAcquireDeadline() async throws {
        let test = try await TestDatabase.make(.postgres, poolSize: 1)
        var options = DatabaseOptions()
        options.acquireTimeout = .milliseconds(300)
        let db = try await DatabaseFactory.open(url: test.url, logger: TestDatabase.quiet, options: options)
        do {
            try await Self.with(db) { harness in
                let holder = HeldTransaction(db, statement: "SELECT 1")
                await holder.start()
                let reply = try await harness.post(json: ["tokens": Self.tokens(1), "payload": ["aps": ["alert": "x"]]])
                Self.expectUnavailable(reply, retryAfter: "1")
                try await holder.release()
                let after = try await harness.post(json: ["tokens": Self.tokens(1), "payload": ["aps": ["alert": "x"]]])
                #expect(after.status == 202)
            }
        } catch {
            await db.close()
            await test.remove()
            throw error
        }
        await db.close()
        await test.remove()
    }

    // MARK: Idempotency-Key

    @Test(
        "the same key and body answer the first response and create nothing; another body is 409",
        arguments: [Backend.sqliteFile, .postgres]
    )
    func replayAndReuse(_ backend: Backend) async throws {
        try await withDatabase(backend, poolSize: 4) { db, _ in
            try await Self.with(db) { harness in
                let body: [String: Any] = [
                    "tokens": Self.tokens(3), "payload": ["aps": ["alert": "Once"]],
                    "send_at": Int(Date().timeIntervalSince1970) + 86_400,
                ]
                let first = try await harness.post(json: body, idempotencyKey: "order-42")
                #expect(first.status == 202)
                #expect(first.headers["idempotent-replayed"] == nil)
                let again = try await harness.post(json: body, idempotencyKey: "order-42")
                #expect(again.status == 202)
                #expect(again.body == first.body)
                #expect(again.headers["location"] == first.headers["location"])
                #expect(again.headers["content-type"] == "application/json")
                #expect(again.headers["idempotent-replayed"] == "true")
                #expect(try await harness.count("notifications") == 1)
                #expect(try await harness.count("notification_deliveries") == 3)

                var changed = body
                changed["tokens"] = Self.tokens(4)
                let reused = try await harness.post(json: changed, idempotencyKey: "order-42")
                #expect(reused.status == 409)
                #expect(reused.error?["code"] as? String == "idempotency_key_reused")
                #expect(reused.error?["field"] as? String == "Idempotency-Key")
                let otherQuery = try await harness.post(
                    "/v1/notifications?wait=false",
                    json: body,
                    idempotencyKey: "order-42"
                )
                #expect(otherQuery.status == 409)

                // Keys belong to an API key: another key's "order-42" is a new request.
                let otherScope = try await harness.post(json: body, idempotencyKey: "order-42", key: Self.otherKey)
                #expect(otherScope.status == 202)
                #expect(otherScope.json["id"] as? String != first.json["id"] as? String)
                #expect(try await harness.count("notifications") == 2)
                // Without a key every request creates.
                _ = try await harness.post(json: body)
                #expect(try await harness.count("notifications") == 3)
                // Only a hash of the API key is stored.
                let scopes = try await db.query("SELECT DISTINCT api_key_hash FROM idempotency_keys", [])
                #expect(scopes.count == 2)
                #expect(try scopes.allSatisfy { try $0.string("api_key_hash").count == 64 })
                #expect(try scopes.allSatisfy { try !$0.string("api_key_hash").contains("test-key") })
            }
        }
    }

    @Test("?wait=true with a key: a retry answers the first 200 with its results and sends nothing again")
    func waitReplays() async throws {
        try await withDatabase(.sqliteFile) { db, _ in
            try await Self.with(db) { harness in
                let body: [String: Any] = ["tokens": Self.tokens(2), "payload": ["aps": ["alert": "Now"]]]
                let first = try await harness.post("/v1/notifications?wait=true", json: body, idempotencyKey: "w-1")
                #expect(first.status == 200)
                #expect(first.json["status"] as? String == "done")
                let again = try await harness.post("/v1/notifications?wait=true", json: body, idempotencyKey: "w-1")
                #expect(again.status == 200)
                #expect(again.body == first.body)
                #expect(try await harness.count("notifications") == 1)
            }
        }
    }

    @Test("a key that is empty, too long or not printable ASCII is 400 naming the header")
    func invalidKeys() async throws {
        try await withDatabase(.sqliteMemory) { db, _ in
            try await Self.with(db) { harness in
                let body: [String: Any] = ["tokens": Self.tokens(1), "payload": ["aps": ["alert": "x"]]]
                for key in [String(repeating: "k", count: 256), "tab\there", "caf\u{E9}"] {
                    let reply = try await harness.post(json: body, idempotencyKey: key)
                    #expect(reply.status == 400)
                    #expect(reply.error?["code"] as? String == "invalid_idempotency_key")
                    #expect(reply.error?["field"] as? String == "Idempotency-Key")
                }
                let longest = try await harness.post(json: body, idempotencyKey: String(repeating: "k", count: 255))
                #expect(longest.status == 202)
                #expect(try await harness.count("notifications") == 1)
            }
        }
    }

    @Test(
        "concurrent requests with one key create one notification; the others replay it or are told to retry",
        arguments: [Backend.sqliteFile, .postgres]
    )
    func concurrentRequests(_ backend: Backend) async throws {
        try await withDatabase(backend, poolSize: 4) { db, _ in
            try await Self.with(db) { harness in
                let body = try JSONSerialization.data(withJSONObject: [
                    "tokens": Self.tokens(500), "payload": ["aps": ["alert": "Race"]],
                    "send_at": Int(Date().timeIntervalSince1970) + 86_400,
                ])
                let replies = try await withThrowingTaskGroup(of: Reply.self) { group in
                    for _ in 0..<8 { group.addTask { try await harness.post(body: body, idempotencyKey: "race-1") } }
                    var replies: [Reply] = []
                    for try await reply in group { replies.append(reply) }
                    return replies
                }
                #expect(try await harness.count("notifications") == 1)
                let created = replies.filter { $0.status == 202 }
                #expect(!created.isEmpty)
                #expect(Set(created.map(\.body)).count == 1)
                for reply in replies where reply.status != 202 {
                    #expect(reply.status == 409)
                    #expect(reply.error?["code"] as? String == "idempotency_request_in_progress")
                    #expect(reply.headers["retry-after"] == "1")
                }
            }
        }
    }

    @Test("keys expire after 24 hours: the prune job deletes them and the key can be used again")
    func expiry() async throws {
        try await withDatabase(.sqliteMemory) { db, _ in
            try await Migrator.migrate(db, HeraldSchema.migrations, logger: TestDatabase.quiet)
            let clock = ManualClock(Date())
            let store = IdempotencyStore(database: db, clock: clock)
            let created = Mutex(0)
            let request = HTTPRequest(
                method: "POST",
                path: "/v1/things",
                headers: ["Authorization": "Bearer \(Self.key)", "Idempotency-Key": "k"],
                body: Array("{}".utf8)
            )
            let handler: @Sendable (HTTPRequest) async throws -> HTTPResponse = { _ in
                let count = created.withLock { count in
                    count += 1
                    return count
                }
                return .json(["n": count], status: 201)
            }
            #expect(try await store.run(request, handler).body == Array(#"{"n":1}"#.utf8))
            clock.advance(86_000)
            #expect(try await store.run(request, handler).body == Array(#"{"n":1}"#.utf8))
            #expect(try await store.prune(now: clock.now()) == 0)
            clock.advance(401)
            #expect(try await store.run(request, handler).body == Array(#"{"n":2}"#.utf8))
            clock.advance(86_401)
            #expect(try await store.prune(now: clock.now()) == 1)
            #expect(try await db.query("SELECT count(*) AS n FROM idempotency_keys", [])[0].int("n") == 0)
            // A handler that fails releases the key: the retry runs.
            let failing = HTTPRequest(
                method: "POST",
                path: "/v1/things",
                headers: ["Authorization": "Bearer \(Self.key)", "Idempotency-Key": "f"],
                body: []
            )
            await #expect(throws: DatabaseError.self) {
                try await store.run(failing) { _ in throw DatabaseError(code: .lockTimeout, message: "busy") }
            }
            #expect(try await store.run(failing, handler).status == 201)

            // The hourly pruning job: one chain however often it is scheduled.
            var handlers = JobHandlers()
            store.register(on: &handlers)
            let queue = JobQueue(database: db, handlers: handlers)
            try await store.schedule(on: queue)
            try await store.schedule(on: queue)
            let jobs = try await db.query(
                "SELECT count(*) AS n FROM jobs WHERE kind = $1",
                [.text(IdempotencyStore.jobKind)]
            )
            #expect(try jobs[0].int("n") == 1)
        }
    }
}

/// Holds a transaction open on a database until ``release()``; ``start()`` returns once it is open.
final class HeldTransaction: Sendable {
    private let opened: AsyncStream<Void>
    private let gate: AsyncStream<Void>.Continuation
    private let task: Task<Void, any Error>

    init(_ db: any Database, statement: String) {
        let (opened, signal) = AsyncStream<Void>.makeStream()
        let (gate, release) = AsyncStream<Void>.makeStream()
        self.opened = opened
        self.gate = release
        task = Task {
            try await db.transaction { tx in
                try await tx.execute(statement, [])
                signal.yield()
                for await _ in gate { break }
            }
        }
    }

    func start() async {
        for await _ in opened { break }
    }

    func release() async throws {
        gate.finish()
        try await task.value
    }
}
