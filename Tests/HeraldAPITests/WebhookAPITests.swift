import DatabaseTestSupport
import Foundation
import HTTPRouting
import HTTPServer
import HeraldAPI
import HeraldCore
import HeraldFeature
import Jobs
import Storage
import Testing
import Webhooks

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `/v1/webhooks` over the real HTTP server, on every backend.
@Suite("Webhooks API over HTTP")
struct WebhookAPITests {
    static let key = "test-key-0123456789abcdef"

    struct Harness {
        let base: String

        func request(
            _ method: String,
            _ path: String,
            json: Any? = nil,
            key: String? = WebhookAPITests.key
        ) async throws -> (status: Int, json: [String: Any]) {
            var request = URLRequest(url: try #require(URL(string: base + path)))
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

    /// The resolver creation uses here: fixed answers, no DNS. Nothing connects to these
    /// addresses; creation only classifies them.
    static let resolve: WebhookDestinationPolicy.Resolve = { host, _ in
        switch host {
        case "example.com": return ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]
        case "metadata.internal.example": return ["169.254.169.254"]
        case "intranet.example": return ["10.0.0.7", "fd00::7"]
        case "mixed.example": return ["10.0.0.7", "93.184.216.34"]
        default: throw CancellationError()
        }
    }

    static func with(
        _ backend: Backend,
        allowHTTP: Bool = false,
        allowPrivate: Bool = false,
        _ body: (Harness) async throws -> Void
    ) async throws {
        let quiet = Logger(label: "test", level: .error, handler: RecordingLogHandler())
        try await withDatabase(backend, poolSize: 4) { db, _ in
            try await Migrator.migrate(db, HeraldSchema.migrations, logger: quiet)
            var router = Router()
            // The Webhooks feature, as herald serve composes it.
            var context = FeatureContext(environment: [:], logger: quiet)
            var configuration = WebhookConfiguration()
            configuration.allowHTTP = allowHTTP
            let store = WebhookStore(database: db)
            let events = WebhookEvents(store: store, configuration: configuration, logger: quiet)
            // Test events are queued only: no worker runs, so nothing is delivered anywhere.
            var handlers = JobHandlers()
            handlers.register(WebhookJobKind.deliver) { _ in .done }
            // The events hold the queue weakly: it lives as long as this harness.
            let queue = JobQueue(database: db, handlers: handlers)
            events.attach(queue)
            context.provide(store)
            context.provide(events)
            context.provide(configuration)
            context.provide(
                WebhookDestinationPolicy(allowPrivate: allowPrivate, resolve: resolve, metrics: MetricsRegistry())
            )
            try FeatureAssembly(coreSettings: [], coreMigrations: [], features: [Webhooks.feature]).register(
                on: &router,
                context: context,
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
                    try await body(Harness(base: "http://127.0.0.1:\(port)"))
                } catch {
                    server.triggerGracefulShutdown()
                    throw error
                }
                server.triggerGracefulShutdown()
                try await group.waitForAll()
            }
            withExtendedLifetime(queue) {}
        }
    }

    static func error(_ json: [String: Any]) -> [String: Any]? {
        json["error"] as? [String: Any]
    }

    /// Foundation's `UUID(uuidString:)` reads each pair of hex digits with `sscanf`, which also
    /// takes a sign: "+f" where "0f" is. A path id is read strictly (``RequestIdentifier/uuid(_:)``),
    /// so such a spelling names nothing, whatever it would have been taken for.
    @Test("a path id with a sign where a 0 is answers 404, not the webhook it resembles")
    func signedIdentifier() async throws {
        try await Self.with(.sqliteMemory) { harness in
            // A pair of digits starts at these offsets; a new id has a 0 at one of them about
            // two times in three, so forty webhooks all without one is out of the question.
            let pairs = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34]
            var found: (id: String, signed: String)?
            for index in 0..<40 where found == nil {
                let created = try await harness.request(
                    "POST",
                    "/v1/webhooks",
                    json: ["url": "https://example.com/\(index)", "events": ["device.invalidated"]]
                )
                #expect(created.status == 201)
                let id = try #require(created.json["id"] as? String)
                var bytes = Array(id.utf8)
                if let zero = pairs.first(where: { bytes[$0] == UInt8(ascii: "0") }) {
                    bytes[zero] = UInt8(ascii: "+")
                    found = (id, String(decoding: bytes, as: UTF8.self))
                }
            }
            let (id, signed) = try #require(found)
            #expect(UUID(uuidString: signed) == UUID(uuidString: id), "Foundation reads the sign as a 0")
            #expect(try await harness.request("GET", "/v1/webhooks/\(id)").status == 200)
            let read = try await harness.request("GET", "/v1/webhooks/\(signed)")
            #expect(read.status == 404)
            #expect(Self.error(read.json)?["code"] as? String == "not_found")
            #expect(try await harness.request("DELETE", "/v1/webhooks/\(signed)").status == 404)
            #expect(try await harness.request("GET", "/v1/webhooks/\(id)").status == 200)
        }
    }

    @Test(
        "create shows the secret once; list and read never do; a test event is queued; delete is 204 then 404",
        arguments: Backend.allCases
    )
    func lifecycle(backend: Backend) async throws {
        try await Self.with(backend) { harness in
            let created = try await harness.request(
                "POST",
                "/v1/webhooks",
                json: ["url": "https://example.com/herald", "events": ["notification.finished", "device.invalidated"]]
            )
            #expect(created.status == 201)
            let id = try #require(created.json["id"] as? String)
            #expect(UUID(uuidString: id) != nil)
            #expect(created.json["url"] as? String == "https://example.com/herald")
            #expect(created.json["events"] as? [String] == ["device.invalidated", "notification.finished"])
            #expect(created.json["created_at"] is String)
            let secret = try #require(created.json["secret"] as? String)
            #expect(secret.hasPrefix("whsec_") && secret.count == 6 + 43)

            let given = try await harness.request(
                "POST",
                "/v1/webhooks",
                json: [
                    "url": "https://example.com/other", "events": ["device.invalidated"],
                    "secret": "my-own-secret-123456",
                ]
            )
            #expect(given.status == 201)
            #expect(given.json["secret"] as? String == "my-own-secret-123456")

            let list = try await harness.request("GET", "/v1/webhooks")
            #expect(list.status == 200)
            let webhooks = try #require(list.json["webhooks"] as? [[String: Any]])
            #expect(webhooks.count == 2)
            #expect(webhooks.allSatisfy { $0["secret"] == nil })
            #expect(list.json["next_cursor"] is NSNull, "present, null: the last page")

            // Paged as every list: oldest first, a cursor to the next page, 400 for one it never gave.
            let first = try await harness.request("GET", "/v1/webhooks?limit=1")
            let cursor = try #require(first.json["next_cursor"] as? String)
            let second = try await harness.request("GET", "/v1/webhooks?limit=1&cursor=\(cursor)")
            #expect(second.json["next_cursor"] is NSNull)
            let paged = [first, second].flatMap { ($0.json["webhooks"] as? [[String: Any]]) ?? [] }
            #expect(paged.compactMap { $0["id"] as? String } == webhooks.compactMap { $0["id"] as? String })
            let forged = try await harness.request("GET", "/v1/webhooks?cursor=12:not-an-id")
            #expect(forged.status == 400)
            #expect(Self.error(forged.json)?["field"] as? String == "cursor")
            #expect(try await harness.request("GET", "/v1/webhooks?limit=5").status == 200)
            #expect(try await harness.request("GET", "/v1/webhooks?limit=1001").status == 400)

            let read = try await harness.request("GET", "/v1/webhooks/\(id)")
            #expect(read.status == 200)
            #expect(read.json["secret"] == nil)
            let delivery = try #require(read.json["delivery"] as? [String: Any])
            #expect(delivery["pending"] as? Int == 0)
            #expect(delivery["dead"] as? Int == 0)
            #expect(delivery["last_error"] is NSNull)

            let test = try await harness.request("POST", "/v1/webhooks/\(id)/test")
            #expect(test.status == 202)
            #expect(test.json["type"] as? String == "webhook.test")
            #expect((test.json["data"] as? [String: Any])?["webhook_id"] as? String == id)
            let queued = try await harness.request("GET", "/v1/webhooks/\(id)")
            #expect((queued.json["delivery"] as? [String: Any])?["pending"] as? Int == 1)
            let withFields = try await harness.request("POST", "/v1/webhooks/\(id)/test", json: ["url": "x"])
            #expect(withFields.status == 400)
            #expect(Self.error(withFields.json)?["code"] as? String == "unknown_field")

            #expect(try await harness.request("DELETE", "/v1/webhooks/\(id)").status == 204)
            #expect(try await harness.request("POST", "/v1/webhooks/\(id)/test").status == 404)
            let gone = try await harness.request("GET", "/v1/webhooks/\(id)")
            #expect(gone.status == 404)
            #expect(Self.error(gone.json)?["code"] as? String == "not_found")
            #expect(try await harness.request("DELETE", "/v1/webhooks/\(id)").status == 404)
        }
    }

    @Test("refusals: unknown events name the accepted ones, http:// needs the setting, a key is required")
    func refusals() async throws {
        try await Self.with(.sqliteMemory) { harness in
            let unknown = try await harness.request(
                "POST",
                "/v1/webhooks",
                json: ["url": "https://example.com/", "events": ["device.created"]]
            )
            #expect(unknown.status == 400)
            #expect(Self.error(unknown.json)?["code"] as? String == "unknown_event")
            #expect(
                (Self.error(unknown.json)?["message"] as? String)?
                    .contains("device.invalidated, device.reassigned, notification.finished") == true
            )
            let http = try await harness.request(
                "POST",
                "/v1/webhooks",
                json: ["url": "http://127.0.0.1:9000/", "events": ["device.invalidated"]]
            )
            #expect(http.status == 400)
            #expect((Self.error(http.json)?["message"] as? String)?.contains("HERALD_WEBHOOK_ALLOW_HTTP") == true)
            let short = try await harness.request(
                "POST",
                "/v1/webhooks",
                json: ["url": "https://example.com/", "events": ["device.invalidated"], "secret": "short"]
            )
            #expect(short.status == 400)
            #expect(Self.error(short.json)?["field"] as? String == "secret")
            #expect(try await harness.request("GET", "/v1/webhooks", key: nil).status == 401)
            #expect(try await harness.request("GET", "/v1/webhooks/not-a-uuid").status == 404)
        }
        try await Self.with(.sqliteMemory, allowHTTP: true, allowPrivate: true) { harness in
            let http = try await harness.request(
                "POST",
                "/v1/webhooks",
                json: ["url": "http://127.0.0.1:9000/", "events": ["device.invalidated"]]
            )
            #expect(http.status == 201)
        }
    }

    /// Hosts in loopback, private, link-local, CGNAT, unique-local, unspecified ranges and their
    /// IPv4-mapped or odd spellings; and names whose every address is such.
    static let refusedURLs = [
        "https://127.0.0.1/hook", "https://127.0.0.1:8443/", "https://169.254.169.254/latest/meta-data/",
        "https://10.1.2.3/", "https://[::1]/", "https://[fd00::1]/", "https://100.64.0.1/", "https://0.0.0.0/",
        "https://[::ffff:127.0.0.1]/", "https://[::ffff:a9fe:a9fe]/", "https://2130706433/", "https://0x7f.1/",
        "https://127.1/", "https://0177.0.0.1/", "https://192.168.1.1/", "https://172.16.0.1/",
        "https://[fe80::1]/", "https://[64:ff9b::7f00:1]/", "https://[2002:7f00:1::]/",
        "https://224.0.0.1/", "https://255.255.255.255/", "https://metadata.internal.example/",
        "https://intranet.example/",
    ]

    @Test(
        "destinations: non-public hosts and names resolving only to them are 400 destination_not_allowed",
        arguments: Backend.allCases
    )
    func destinationNotAllowed(backend: Backend) async throws {
        try await Self.with(backend, allowHTTP: true) { harness in
            for url in Self.refusedURLs + Self.refusedURLs.map({ "http" + $0.dropFirst(5) }) {
                let answer = try await harness.request(
                    "POST",
                    "/v1/webhooks",
                    json: ["url": url, "events": ["device.invalidated"]]
                )
                #expect(answer.status == 400, "\(url)")
                let error = Self.error(answer.json)
                #expect(error?["code"] as? String == "destination_not_allowed", "\(url): \(answer.json)")
                #expect(error?["field"] as? String == "url")
                #expect((error?["message"] as? String)?.contains("HERALD_WEBHOOK_ALLOW_PRIVATE=1") == true)
            }
            // Resolved addresses are not named: the message says what kind they are.
            let named = try await harness.request(
                "POST",
                "/v1/webhooks",
                json: ["url": "https://intranet.example/", "events": ["device.invalidated"]]
            )
            #expect((Self.error(named.json)?["message"] as? String)?.contains("10.0.0.7") == false)
            // Public, partly public, and (DNS down) unresolvable names are accepted.
            for url in ["https://example.com/", "https://mixed.example/", "https://unresolvable.example/"] {
                let answer = try await harness.request(
                    "POST",
                    "/v1/webhooks",
                    json: ["url": url, "events": ["device.invalidated"]]
                )
                #expect(answer.status == 201, "\(url): \(answer.json)")
            }
            let list = try await harness.request("GET", "/v1/webhooks")
            #expect((list.json["webhooks"] as? [Any])?.count == 3)
        }
        try await Self.with(backend, allowHTTP: true, allowPrivate: true) { harness in
            for url in Self.refusedURLs {
                let answer = try await harness.request(
                    "POST",
                    "/v1/webhooks",
                    json: ["url": url, "events": ["device.invalidated"]]
                )
                #expect(answer.status == 201, "\(url): \(answer.json)")
            }
        }
    }
}
