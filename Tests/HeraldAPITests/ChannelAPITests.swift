import APNs
import APNsSimulator
import APNsTransport
import Channels
import DatabaseTestSupport
import Foundation
import HTTPRouting
import HTTPServer
import HeraldAPI
import HeraldCore
import HeraldCrypto
import HeraldFeature
import Notifications
import Storage
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `/v1/channels` over the real HTTP server, with the APNs client creating, listing, deleting and
/// broadcasting on channels of the in-process simulator over HTTP/2 + TLS.
@Suite("Channels API over HTTP")
struct ChannelAPITests {
    static let key = "test-key-0123456789abcdef"
    static let topic = "com.example.channels"

    struct Harness {
        let base: String
        let simulator: APNSSimulator
        let signingKey: APNSSigningKey

        func request(
            _ method: String,
            _ path: String,
            body: String? = nil,
            key: String? = ChannelAPITests.key
        ) async throws -> (status: Int, json: [String: Any], headers: [AnyHashable: Any]) {
            var request = URLRequest(url: URL(string: base + path)!)
            request.httpMethod = method
            if let key { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
            if let body {
                request.httpBody = Data(body.utf8)
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            }
            let (data, response) = try await URLSession.shared.data(for: request)
            let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
            let http = response as? HTTPURLResponse
            return (http?.statusCode ?? 0, object, http?.allHeaderFields ?? [:])
        }

        /// Creates a channel through the API and returns its id.
        func createChannel(policy: Int = 0) async throws -> String {
            let created = try await request("POST", "/v1/channels", body: #"{"storage_policy":\#(policy)}"#)
            #expect(created.status == 201)
            return try #require(created.json["id"] as? String)
        }
    }

    static func error(_ json: [String: Any]) -> [String: Any]? {
        json["error"] as? [String: Any]
    }

    /// The channel id in a path: percent-encoded.
    static func path(_ id: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return id.addingPercentEncoding(withAllowedCharacters: allowed) ?? id
    }

    static func with(
        configure: (inout APNSSimulator.Configuration) -> Void = { _ in },
        _ body: (Harness) async throws -> Void
    ) async throws {
        let signingKey = try APNSSigningKey(keyID: "CHANNELK01", teamID: "CHANTEAM01", privateKey: P256PrivateKey())
        var configuration = APNSSimulator.Configuration()
        configuration.port = 0
        configuration.keys = [APNSSimulatorKey(keyID: signingKey.keyID, publicKey: signingKey.privateKey.publicKey)]
        configuration.teamID = signingKey.teamID
        configuration.topics = [topic]
        configuration.logger = Logger(label: "test.simulator", level: .error)
        configure(&configuration)
        let simulator = try APNSSimulator(configuration: configuration)
        let endpoints = APNSEndpoints(all: simulator.endpoint, caFile: simulator.caFile)
        let quiet = Logger(label: "test", level: .error)
        let clients = APNSClientProvider(
            apps: [APNSAppConfiguration(bundleID: topic, credentials: .token(signingKey))],
            endpoints: endpoints,
            transports: APNSConnectionPoolFactory(logger: quiet, metrics: MetricsRegistry()),
            clock: SystemClock(),
            retryPolicy: .never,
            logger: quiet
        )
        try await withDatabase(.sqliteMemory, poolSize: 2) { database, _ in
            try await Migrator.migrate(database, HeraldSchema.migrations, logger: quiet)
            // As herald serve composes it: the feature, behind the API key and Idempotency-Key.
            var router = Router()
            var context = FeatureContext(environment: [:], logger: quiet)
            context.provide(clients)
            try FeatureAssembly(coreSettings: [], coreMigrations: [], features: [Channels.feature]).register(
                on: &router,
                context: context,
                machinery: RequestMachinery(
                    authenticators: [.apiKey: APIKeys([key])],
                    idempotency: IdempotencyStore(database: database)
                )
            )
            try await serve(router, simulator: simulator, clients: clients, signingKey: signingKey, body)
        }
    }

    private static func serve(
        _ router: Router,
        simulator: APNSSimulator,
        clients: APNSClientProvider,
        signingKey: APNSSigningKey,
        _ body: (Harness) async throws -> Void
    ) async throws {
        let quiet = Logger(label: "test", level: .error)
        var http = HTTPServer.Configuration()
        http.host = "127.0.0.1"
        http.port = 0
        let server = HTTPServer(configuration: http, responder: router, logger: quiet)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await simulator.run() }
            group.addTask { try await server.run() }
            let port = try await server.listeningPort()
            let harness = Harness(base: "http://127.0.0.1:\(port)", simulator: simulator, signingKey: signingKey)
            do {
                try await body(harness)
            } catch {
                server.triggerGracefulShutdown()
                simulator.triggerGracefulShutdown()
                await clients.shutdown()
                throw error
            }
            server.triggerGracefulShutdown()
            simulator.triggerGracefulShutdown()
            await clients.shutdown()
            try await group.waitForAll()
        }
    }

    @Test("a channel is created, listed, read, broadcast to and deleted, each through APNs")
    func lifecycle() async throws {
        try await Self.with { harness in
            let created = try await harness.request(
                "POST",
                "/v1/channels",
                body: #"{"app":"\#(Self.topic)","environment":"sandbox","storage_policy":1}"#
            )
            #expect(created.status == 201)
            let id = try #require(created.json["id"] as? String)
            #expect(created.json["app"] as? String == Self.topic)
            #expect(created.json["environment"] as? String == "sandbox")
            #expect(created.json["storage_policy"] as? Int == 1)
            #expect(created.headers["Location"] as? String == "/v1/channels/\(Self.path(id))")
            #expect(harness.simulator.channels().map(\.channelID) == [id])

            let list = try await harness.request("GET", "/v1/channels?app=\(Self.topic)&environment=sandbox")
            #expect(list.status == 200)
            #expect((list.json["channels"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [id])
            #expect(list.json["next_cursor"] is NSNull, "paged as every list: the last page says so")
            // A second channel: one per page, in id order, the cursor leading to the other.
            let second = try await harness.request(
                "POST",
                "/v1/channels",
                body: #"{"app":"\#(Self.topic)","environment":"sandbox","storage_policy":0}"#
            )
            let secondID = try #require(second.json["id"] as? String)
            let query = "app=\(Self.topic)&environment=sandbox"
            let first = try await harness.request("GET", "/v1/channels?\(query)&limit=1")
            let cursor = try #require(first.json["next_cursor"] as? String)
            let escaped = cursor.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? cursor
            let next = try await harness.request("GET", "/v1/channels?\(query)&limit=1&cursor=\(escaped)")
            #expect(next.json["next_cursor"] is NSNull)
            let paged = [first, next].flatMap { ($0.json["channels"] as? [[String: Any]]) ?? [] }
            #expect(paged.compactMap { $0["id"] as? String } == [id, secondID].sorted())
            #expect(try await harness.request("DELETE", "/v1/channels/\(Self.path(secondID))?\(query)").status == 204)
            let read = try await harness.request("GET", "/v1/channels/\(Self.path(id))")
            #expect(read.status == 200)
            #expect(read.json["storage_policy"] as? Int == 1)
            // The base64url spelling of the id names the same channel.
            let url = id.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(try await harness.request("GET", "/v1/channels/\(url)").status == 200)

            let stale = Int(Date().timeIntervalSince1970) + 600
            let sent = try await harness.request(
                "POST",
                "/v1/channels/\(Self.path(id))/broadcast",
                body: #"""
                    {"event":"update","content_state":{"score":"2-1"},"alert":{"title":"Goal","body":"2-1"},
                     "stale_date":\#(stale),"priority":5,"expiration":"2030-01-01T00:00:00Z"}
                    """#
            )
            #expect(sent.status == 200)
            #expect((sent.json["apns_request_id"] as? String).flatMap(UUID.init(uuidString:)) != nil)
            let delivery = try #require(harness.simulator.deliveries(.init(kind: .broadcast)).first)
            #expect(delivery.status == 200)
            #expect(delivery.channelID == id)
            #expect(delivery.priority == 5)
            #expect(delivery.expiration == 1_893_456_000)
            let aps = try APNSJSONValue(parsing: delivery.payload)["aps"]
            #expect(aps?["event"] == "update")
            #expect(aps?["content-state"] == ["score": "2-1"])
            #expect(aps?["stale-date"] == .integer(Int64(stale)))
            #expect(aps?["alert"]?["title"] == "Goal")
            #expect(aps?["timestamp"] == .integer(Int64(try #require(sent.json["timestamp"] as? Int))))

            #expect(try await harness.request("DELETE", "/v1/channels/\(Self.path(id))").status == 204)
            #expect(harness.simulator.channels().isEmpty)
            let gone = try await harness.request(
                "POST",
                "/v1/channels/\(Self.path(id))/broadcast",
                body: #"{"event":"end","content_state":{}}"#
            )
            #expect(gone.status == 404)
            #expect(Self.error(gone.json)?["code"] as? String == "unknown_channel")
            #expect((Self.error(gone.json)?["message"] as? String)?.contains("ChannelNotRegistered") == true)
            #expect(try await harness.request("DELETE", "/v1/channels/\(Self.path(id))").status == 404)
        }
    }

    @Test("a retried POST with the same Idempotency-Key answers the first channel instead of creating another")
    func idempotentCreate() async throws {
        try await Self.with { harness in
            func create(_ key: String) async throws -> (status: Int, json: [String: Any], headers: [AnyHashable: Any]) {
                var request = URLRequest(url: URL(string: harness.base + "/v1/channels")!)
                request.httpMethod = "POST"
                request.setValue("Bearer \(Self.key)", forHTTPHeaderField: "Authorization")
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.setValue(key, forHTTPHeaderField: "Idempotency-Key")
                request.httpBody = Data(#"{"storage_policy":1}"#.utf8)
                let (data, response) = try await URLSession.shared.data(for: request)
                let http = response as? HTTPURLResponse
                let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
                return (http?.statusCode ?? 0, object, http?.allHeaderFields ?? [:])
            }
            let first = try await create("meetup-42")
            let again = try await create("meetup-42")
            #expect(first.status == 201)
            #expect(again.status == 201)
            #expect(again.json["id"] as? String == first.json["id"] as? String)
            #expect(again.headers["Idempotent-Replayed"] as? String == "true")
            #expect(harness.simulator.channels().count == 1)
            #expect(try await create("meetup-43").json["id"] as? String != first.json["id"] as? String)
            #expect(harness.simulator.channels().count == 2)
        }
    }

    @Test("a broadcast updates the virtual devices subscribed to the channel, each one newer than the last")
    func broadcastReachesVirtualDevices() async throws {
        try await Self.with { harness in
            let id = try await harness.createChannel()
            // A phone starts the activity by push-to-start with input-push-channel.
            let pool = APNSConnectionPool(
                endpoint: harness.simulator.endpoint,
                tls: APNSTLSConfiguration(caFile: harness.simulator.caFile, credentials: .token(harness.signingKey)),
                logger: Logger(label: "test.pool", level: .error)
            )
            let client = APNSClient(
                transport: pool,
                credentials: .token(harness.signingKey),
                retryPolicy: .never,
                logger: Logger(label: "test.client", level: .error)
            )
            let token = String(repeating: "5a", count: 32)
            let start = try APNSRequest(
                deviceToken: token,
                pushType: .liveActivity,
                topic: .bundleID(Self.topic),
                payload: APNSLiveActivityPayload.start(
                    attributesType: "MeetupAttributes",
                    attributes: ["place": "Park"],
                    contentState: ["coming": 1],
                    alert: APNSLiveActivityAlert(title: "Meetup", body: "Starting"),
                    timestamp: Date(timeIntervalSinceNow: -60),
                    inputPushChannel: id
                )
            )
            #expect(try await client.send(start).isDelivered)
            await pool.shutdown()
            #expect(harness.simulator.activities(device: token).first?.channelID == id)

            for coming in 2...3 {
                let sent = try await harness.request(
                    "POST",
                    "/v1/channels/\(Self.path(id))/broadcast",
                    body: #"{"event":"update","content_state":{"coming":\#(coming)}}"#
                )
                #expect(sent.status == 200)
            }
            let activity = try #require(harness.simulator.activities(device: token).first)
            #expect(activity.contentState == ["coming": 3])
            #expect(activity.changes.filter { $0.route == .broadcast && $0.applied }.count == 2)
            let ended = try await harness.request(
                "POST",
                "/v1/channels/\(Self.path(id))/broadcast",
                body: #"{"event":"end","content_state":{"coming":0},"dismissal_date":0}"#
            )
            #expect(ended.status == 200)
            #expect(harness.simulator.activities(device: token).first?.state == .dismissed)
        }
    }

    @Test("every input limit and mistake is a 4xx naming the field")
    func strictInput() async throws {
        try await Self.with { harness in
            let missingKey = try await harness.request("GET", "/v1/channels", key: nil)
            #expect(missingKey.status == 401)
            let id = Self.path(try await harness.createChannel())
            let cases: [(String, String, String?, Int, String, String?)] = [
                ("POST", "/v1/channels", #"{"storage_policy":2}"#, 400, "invalid_storage_policy", "storage_policy"),
                ("POST", "/v1/channels", #"{}"#, 400, "invalid_storage_policy", "storage_policy"),
                ("POST", "/v1/channels", #"{"storage_policy":0,"name":"x"}"#, 400, "unknown_field", "name"),
                ("POST", "/v1/channels", #"{"storage_policy":0,}"#, 400, "invalid_json", "storage_policy"),
                ("POST", "/v1/channels", #"{"storage_policy":0,"app":"com.example.other"}"#, 400, "unknown_app", "app"),
                (
                    "POST", "/v1/channels", #"{"storage_policy":0,"environment":"dev"}"#, 400, "invalid_environment",
                    "environment"
                ),
                ("GET", "/v1/channels?environment=dev", nil, 400, "invalid_environment", "environment"),
                ("GET", "/v1/channels?limit=1001", nil, 400, "invalid_limit", "limit"),
                ("GET", "/v1/channels/not%20base64", nil, 404, "unknown_channel", "id"),
                (
                    "POST", "/v1/channels/\(id)/broadcast", #"{"event":"start","content_state":{}}"#, 400,
                    "invalid_event", "event"
                ),
                (
                    "POST", "/v1/channels/\(id)/broadcast", #"{"event":"update"}"#, 400, "invalid_content_state",
                    "content_state"
                ),
                (
                    "POST", "/v1/channels/\(id)/broadcast", #"{"event":"update","content_state":{},"priority":7}"#, 400,
                    "invalid_priority", "priority"
                ),
                (
                    "POST", "/v1/channels/\(id)/broadcast", #"{"event":"update","content_state":{},"alert":"Hi"}"#, 400,
                    "invalid_alert", "alert"
                ),
                (
                    "POST", "/v1/channels/\(id)/broadcast",
                    #"{"event":"update","content_state":{},"stale_date":"soon"}"#, 400, "invalid_stale_date",
                    "stale_date"
                ),
                (
                    "POST", "/v1/channels/\(id)/broadcast",
                    #"{"event":"update","content_state":{},"stale_date":1900000000000}"#, 400, "invalid_stale_date",
                    "stale_date"
                ),
                (
                    "POST", "/v1/channels/\(id)/broadcast", #"{"event":"update","content_state":{},"channel":"x"}"#,
                    400, "unknown_field", "channel"
                ),
                // The channel stores nothing (policy 0): APNs refuses a later expiration.
                (
                    "POST", "/v1/channels/\(id)/broadcast",
                    #"{"event":"update","content_state":{},"expiration":"2030-01-01T00:00:00Z"}"#, 400, "apns_rejected",
                    nil
                ),
                (
                    "POST", "/v1/channels/\(id)/broadcast",
                    #"{"event":"update","content_state":{"x":"\#(String(repeating: "x", count: 6000))"}}"#, 413,
                    "payload_too_large", nil
                ),
            ]
            for (method, path, body, status, code, field) in cases {
                let response = try await harness.request(method, path, body: body)
                #expect(response.status == status, "\(method) \(path) \(body ?? "")")
                #expect(Self.error(response.json)?["code"] as? String == code, "\(method) \(path) \(body ?? "")")
                #expect(Self.error(response.json)?["field"] as? String == field, "\(method) \(path) \(body ?? "")")
                #expect((Self.error(response.json)?["message"] as? String)?.isEmpty == false)
            }
            let expired = try await harness.request(
                "POST",
                "/v1/channels/\(id)/broadcast",
                body: #"{"event":"update","content_state":{},"expiration":"2030-01-01T00:00:00Z"}"#
            )
            #expect((Self.error(expired.json)?["message"] as? String)?.contains("BadExpirationDate") == true)
            let huge = try await harness.request(
                "POST",
                "/v1/channels",
                body: #"{"storage_policy":0,"app":"\#(String(repeating: "a", count: 20_000))"}"#
            )
            #expect(huge.status == 413)
        }
    }

    @Test("APNs' refusals become clear statuses: limit 409, no capability 422, outage 503 with Retry-After")
    func apnsRefusals() async throws {
        try await Self.with(configure: { $0.channelLimit = 1 }) { harness in
            _ = try await harness.createChannel()
            let full = try await harness.request("POST", "/v1/channels", body: #"{"storage_policy":0}"#)
            #expect(full.status == 409)
            #expect(Self.error(full.json)?["code"] as? String == "channel_limit_reached")
            harness.simulator.addFault(
                APNSSimulatorFault(.respond(status: 503, reason: .serviceUnavailable), appliesTo: [.channels])
            )
            let down = try await harness.request("GET", "/v1/channels")
            #expect(down.status == 503)
            #expect(Self.error(down.json)?["code"] as? String == "apns_unavailable")
            #expect(down.headers["Retry-After"] as? String == "5")
        }
        try await Self.with(configure: { $0.broadcastDisabledTopics = [Self.topic] }) { harness in
            let refused = try await harness.request("POST", "/v1/channels", body: #"{"storage_policy":0}"#)
            #expect(refused.status == 422)
            #expect(Self.error(refused.json)?["code"] as? String == "broadcast_not_enabled")
        }
    }
}
