import APNs
import APNsSimulator
import APNsTransport
import AsyncTestSupport
import Foundation
import HTTPRouting
import HTTPServer
import HeraldCore
import HeraldCrypto
import Relay
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The relay as it runs in production, end to end: an HTTP server with the relay routes, the real
/// APNs client and connection pool, and the APNs simulator over HTTP/2 + TLS.
struct RelayHarness {
    static let topic = "org.example.feditext"
    let simulator: APNSSimulator
    let service: RelayService
    let server: HTTPServer
    let pools: [APNSConnectionPool]
    let port: Int

    /// Runs `body` with a relay whose production and sandbox environments both go to one simulator
    /// (or, with `apnsPort`, to that port, where nothing may listen). With `runsService` false,
    /// `body` runs the relay service's `run()` itself.
    static func with(
        apnsPort: Int? = nil,
        metrics: MetricsRegistry = MetricsRegistry(),
        maxQueuedBeforeWaiting: Int = 1_024,
        maxInFlight: Int = 10_000,
        runsService: Bool = true,
        relayLogger: Logger = Logger(label: "test.relay", level: .error),
        clock: any HeraldClock = SystemClock(),
        _ body: (RelayHarness) async throws -> Void
    ) async throws {
        let key = try APNSSigningKey(keyID: "RELAYKEY01", teamID: "RELAYTEAM1", privateKey: P256PrivateKey())
        var simulatorConfiguration = APNSSimulator.Configuration()
        simulatorConfiguration.port = 0
        simulatorConfiguration.keys = [APNSSimulatorKey(keyID: key.keyID, publicKey: key.privateKey.publicKey)]
        simulatorConfiguration.teamID = key.teamID
        simulatorConfiguration.topics = [topic]
        simulatorConfiguration.logger = Logger(label: "test.simulator", level: .error)
        // A certificate of our own, so that a second simulator (the outage test) is trusted too.
        let certificate = try SelfSignedCertificate.generate(
            commonName: "localhost",
            subjectAlternativeNames: ["localhost", "127.0.0.1"],
            key: P256PrivateKey()
        )
        simulatorConfiguration.tls = .provided(
            certificateChainPEM: certificate.certificatePEM,
            privateKeyPEM: certificate.privateKeyPEM
        )
        let caFile = FileManager.default.temporaryDirectory.appendingPathComponent("relay-ca-\(UUID()).pem").path
        try certificate.certificatePEM.write(toFile: caFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: caFile) }
        let simulator = try APNSSimulator(configuration: simulatorConfiguration)

        var endpoint = simulator.endpoint
        if let apnsPort { endpoint.port = apnsPort }
        let tokens = APNSTokenManager(signingKey: key, clock: SystemClock())
        var poolConfiguration = APNSConnectionPool.Configuration()
        // Generous: at the start of a full run the machine is loaded and a TLS handshake can take
        // seconds. A closed port (the outage tests) is refused at once whatever the timeout.
        poolConfiguration.connectTimeout = .seconds(60)
        poolConfiguration.reconnectBackoff = (.milliseconds(50), .milliseconds(200))
        // As `herald serve` and `herald relay` set it.
        poolConfiguration.coalescingWindow = .milliseconds(2)
        var routes: [APNSEnvironment: APNSClient] = [:]
        var pools: [APNSConnectionPool] = []
        var budgetConfiguration = APNSSendBudget.Configuration()
        budgetConfiguration.waitAbove = maxQueuedBeforeWaiting
        budgetConfiguration.limit = maxInFlight
        // One budget for both environments, as `herald relay` shares its provider's.
        let budget = APNSSendBudget(configuration: budgetConfiguration)
        for environment in APNSEnvironment.allCases {
            let pool = APNSConnectionPool(
                endpoint: endpoint,
                tls: APNSTLSConfiguration(caFile: caFile, credentials: .token(key)),
                configuration: poolConfiguration,
                logger: Logger(label: "test.apns", level: .error),
                metrics: metrics
            )
            let client = APNSClient(
                transport: pool,
                credentials: .token(key),
                tokenProvider: tokens,
                budget: budget,
                logger: Logger(label: "test.apns", level: .error)
            )
            routes[environment] = client
            pools.append(pool)
        }
        let service = RelayService(
            configuration: RelayService.Configuration(topic: topic),
            clients: routes,
            logger: relayLogger,
            metrics: metrics,
            clock: clock
        )
        var router = Router()
        router.get("/") { _ in HTTPResponse(status: 200) }
        router.head("/") { _ in HTTPResponse(status: 200) }
        service.register(on: &router)
        var http = HTTPServer.Configuration()
        http.host = "127.0.0.1"
        http.port = 0
        let server = HTTPServer(
            configuration: http,
            responder: router,
            logger: Logger(label: "test.http", level: .error),
            metrics: metrics
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await simulator.run() }
            group.addTask { try await server.run() }
            if runsService { group.addTask { try await service.run() } }
            defer {
                server.triggerGracefulShutdown()
                service.triggerGracefulShutdown()
                simulator.triggerGracefulShutdown()
            }
            let port = try await server.listeningPort()
            let harness = RelayHarness(simulator: simulator, service: service, server: server, pools: pools, port: port)
            do {
                try await body(harness)
            } catch {
                for pool in pools { await pool.shutdown() }
                throw error
            }
            for pool in pools { await pool.shutdown() }
        }
    }

    /// POSTs to the relay and returns status, headers and body.
    func post(
        _ path: String,
        headers: [String: String] = ["Content-Encoding": "aes128gcm"],
        body: [UInt8] = [1, 2, 3],
        method: String = "POST"
    ) async throws -> (status: Int, headers: [String: String], body: String) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if method == "POST" { request.httpBody = Data(body) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as? HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http?.allHeaderFields ?? [:] {
            if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
        }
        return (http?.statusCode ?? 0, fields, String(decoding: data, as: UTF8.self))
    }

    /// Waits until the simulator has recorded `count` deliveries for `token` (the relay answers
    /// before APNs does) and returns them.
    func deliveries(token: String, count: Int = 1) async throws -> [APNSSimulatorDelivery] {
        let filter = APNSSimulatorDeliveryFilter(token: token)
        try await eventually("the simulator to receive \(count) push(es) for \(token)") {
            simulator.deliveries(filter).count >= count
        }
        return simulator.deliveries(filter)
    }
}

/// A random 64-hex-digit device token.
func randomToken() -> String {
    SecureRandom.bytes(32).map { String(format: "%02x", $0) }.joined()
}
