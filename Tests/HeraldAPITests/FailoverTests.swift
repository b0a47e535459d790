import APNs
import APNsSimulator
import APNsTransport
import AsyncTestSupport
import DatabaseTestSupport
import Foundation
import HeraldAPI
import HeraldCore
import HeraldCrypto
import Jobs
import Notifications
import Storage
import Testing

/// Two `herald serve` processes share one PostgreSQL database and one APNs simulator (in this
/// process). 20,000 one-token notifications fall due at the same moment: every one is delivered,
/// none twice while both instances live; when one instance is killed with SIGKILL mid-run, the
/// other finishes its work after the lease, and only requests that were in flight are repeated.
@Suite("Two instances share the job queue", .serialized)
struct FailoverTests {
    static let topic = "com.example.failover"
    static let notifications = 20_000
    static let concurrency = 64
    static let leaseSeconds = 5

    /// The simulator, the credentials both instances use, and the database.
    struct Fixture {
        let simulator: APNSSimulator
        let signingKey: APNSSigningKey
        let keyFile: String
        let caFile: String
        let database: any Database
        let test: TestDatabase
        let service: NotificationService

        func environment() -> [String: String] {
            [
                "DATABASE_URL": test.url, "HOST": "127.0.0.1", "PORT": "0", "LOG_LEVEL": "info",
                "APNS_AUTH_KEY_FILE": keyFile, "APNS_KEY_ID": signingKey.keyID, "APPLE_TEAM_ID": signingKey.teamID,
                "TOPIC": FailoverTests.topic, "APNS_PRODUCTION_URL": simulator.url, "APNS_SANDBOX_URL": simulator.url,
                "APNS_CA_FILE": caFile, "HERALD_API_KEYS": "failover-test-key",
                "HERALD_JOB_CONCURRENCY": String(FailoverTests.concurrency),
                "HERALD_JOB_LEASE_SECONDS": String(FailoverTests.leaseSeconds),
            ]
        }

        /// Stores `count` one-token notifications due now, eight at a time; returns their tokens.
        func createNotifications(count: Int, prefix: UInt8) async throws -> [String] {
            let tokens = (0..<count).map { index in
                String(format: "%02x%010x", prefix, index) + String(repeating: "0", count: 52)
            }
            let service = self.service
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<8 {
                    group.addTask {
                        for index in stride(from: lane, to: tokens.count, by: 8) {
                            let body = #"{"tokens":["\#(tokens[index])"],"payload":{"aps":{"alert":"\#(index)"}}}"#
                            _ = try await service.create(try NotificationRequest.parse(Array(body.utf8), now: Date()))
                        }
                    }
                }
                try await group.waitForAll()
            }
            return tokens
        }

        /// Deliveries per token among `tokens`.
        func deliveryCounts(_ tokens: Set<String>) -> [String: Int] {
            var counts: [String: Int] = [:]
            for delivery in simulator.deliveries() {
                if let token = delivery.token, tokens.contains(token) { counts[token, default: 0] += 1 }
            }
            return counts
        }

        func notificationsNotDone() async throws -> Int {
            Int(
                try await database.queryFirst("SELECT COUNT(*) AS n FROM notifications WHERE status <> 'done'")?
                    .int("n") ?? -1
            )
        }
    }

    static func withFixture(_ body: (Fixture) async throws -> Void) async throws {
        let privateKey = P256PrivateKey()
        let signingKey = try APNSSigningKey(keyID: "FAILOVER01", teamID: "FAILTEAM01", privateKey: privateKey)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-failover-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("key.p8").path
        try privateKey.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)

        var configuration = APNSSimulator.Configuration()
        configuration.port = 0
        configuration.keys = [APNSSimulatorKey(keyID: signingKey.keyID, publicKey: privateKey.publicKey)]
        configuration.teamID = signingKey.teamID
        configuration.topics = [topic]
        configuration.deliveryCapacity = 3 * notifications
        configuration.logger = Logger(label: "test.simulator", level: .error)
        let certificate = try SelfSignedCertificate.generate(
            commonName: "localhost",
            subjectAlternativeNames: ["localhost", "127.0.0.1"],
            key: P256PrivateKey()
        )
        configuration.tls = .provided(
            certificateChainPEM: certificate.certificatePEM,
            privateKeyPEM: certificate.privateKeyPEM
        )
        let caFile = directory.appendingPathComponent("ca.pem").path
        try certificate.certificatePEM.write(toFile: caFile, atomically: true, encoding: .utf8)
        let simulator = try APNSSimulator(configuration: configuration)
        let running = Task { try await simulator.run() }

        let test = try await TestDatabase.make(.postgres, poolSize: 8)
        let quiet = Logger(label: "test.failover", level: .error, handler: RecordingLogHandler())
        let database = try await test.open(logger: quiet)
        do {
            try await Migrator.migrate(database, HeraldSchema.migrations, logger: quiet)
            let endpoints = APNSEndpoints(all: simulator.endpoint, caFile: caFile)
            let clients = APNSClientProvider(
                apps: [APNSAppConfiguration(bundleID: topic, credentials: .token(signingKey))],
                endpoints: endpoints,
                transports: APNSConnectionPoolFactory(logger: quiet, metrics: MetricsRegistry()),
                clock: SystemClock(),
                logger: quiet
            )
            let sender = NotificationSender(
                store: NotificationStore(database: database),
                clients: clients,
                metrics: MetricsRegistry(),
                logger: quiet
            )
            // This process only stores notifications; the two herald processes send them.
            let queue = JobQueue(database: database, handlers: JobHandlers(), metrics: MetricsRegistry())
            let service = NotificationService(queue: queue, sender: sender, metrics: MetricsRegistry(), logger: quiet)
            try await body(
                Fixture(
                    simulator: simulator,
                    signingKey: signingKey,
                    keyFile: keyFile,
                    caFile: caFile,
                    database: database,
                    test: test,
                    service: service
                )
            )
        } catch {
            await database.close()
            await test.remove()
            simulator.triggerGracefulShutdown()
            _ = try? await running.value
            throw error
        }
        await database.close()
        await test.remove()
        simulator.triggerGracefulShutdown()
        _ = try? await running.value
    }

    @Test func twentyThousandJobsRunOnceEachOnTwoLiveInstances() async throws {
        try await Self.withFixture { fixture in
            let tokens = try await fixture.createNotifications(count: Self.notifications, prefix: 0xa1)
            let first = try HeraldProcess(arguments: ["serve"], environment: fixture.environment())
            let second = try HeraldProcess(arguments: ["serve"], environment: fixture.environment())
            _ = try await first.listeningPort()
            _ = try await second.listeningPort()
            try await eventually(
                "sending 20,000 notifications",
                timeout: .seconds(240),
                pollingEvery: .milliseconds(100)
            ) {
                try await fixture.notificationsNotDone() == 0
            }
            let counts = fixture.deliveryCounts(Set(tokens))
            #expect(counts.count == Self.notifications, "every token delivered")
            #expect(counts.values.allSatisfy { $0 == 1 }, "no token delivered twice")
            let connections = Set(fixture.simulator.deliveries().map(\.connectionID))
            #expect(connections.count >= 2, "both instances sent")
            first.signal(SIGTERM)
            second.signal(SIGTERM)
            #expect(try await first.waitForExit(timeout: .seconds(20)) == 0, "log:\n\(first.log)")
            #expect(try await second.waitForExit(timeout: .seconds(20)) == 0, "log:\n\(second.log)")
        }
    }

    @Test func killedInstanceWorkIsFinishedByTheOtherAfterItsLease() async throws {
        try await Self.withFixture { fixture in
            let tokens = try await fixture.createNotifications(count: Self.notifications, prefix: 0xb2)
            let tokenSet = Set(tokens)
            let victim = try HeraldProcess(arguments: ["serve"], environment: fixture.environment())
            let survivor = try HeraldProcess(arguments: ["serve"], environment: fixture.environment())
            _ = try await victim.listeningPort()
            _ = try await survivor.listeningPort()
            try await eventually("a quarter of the sends", timeout: .seconds(120), pollingEvery: .milliseconds(100)) {
                fixture.deliveryCounts(tokenSet).count >= Self.notifications / 4
            }
            victim.signal(SIGKILL)
            _ = try await victim.waitForExit(timeout: .seconds(10))
            let deliveredAtKill = fixture.deliveryCounts(tokenSet).count
            try await eventually(
                "the survivor finishing every notification",
                timeout: .seconds(240),
                pollingEvery: .milliseconds(100)
            ) {
                try await fixture.notificationsNotDone() == 0
            }
            let counts = fixture.deliveryCounts(tokenSet)
            let duplicates = counts.values.filter { $0 > 1 }.count
            print(
                "failover: \(Self.notifications) notifications, victim killed after \(deliveredAtKill) deliveries; "
                    + "all \(counts.count) delivered; duplicates=\(duplicates) (requests in flight at the kill; "
                    + "bound: \(Self.concurrency) jobs × 1 token)"
            )
            #expect(counts.count == Self.notifications, "every token delivered")
            #expect(duplicates <= Self.concurrency, "only requests in flight at the kill are repeated")
            #expect(counts.values.allSatisfy { $0 <= 2 })
            survivor.signal(SIGTERM)
            #expect(try await survivor.waitForExit(timeout: .seconds(20)) == 0, "log:\n\(survivor.log)")
        }
    }
}
