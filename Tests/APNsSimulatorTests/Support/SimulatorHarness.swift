import APNs
import APNsSimulator
import APNsTransport
import Foundation
import HTTP2
import HeraldCore
import HeraldCrypto
import HeraldIO
import Synchronization
import Testing

/// A wall clock that moves only when a test says so; intervals and sleeps are real.
final class TestClock: HeraldClock {
    private let current: Mutex<Date>

    init(_ start: Date = Date()) {
        current = Mutex(Date(timeIntervalSince1970: start.timeIntervalSince1970.rounded(.down)))
    }

    func now() -> Date { current.withLock { $0 } }

    func uptime() -> Duration { SystemClock().uptime() }

    func sleep(until deadline: Date) async throws {
        try await SystemClock().sleep(for: Duration(timeInterval: max(0, deadline.timeIntervalSince(now()))))
    }

    func sleep(for duration: Duration) async throws {
        try await SystemClock().sleep(for: duration)
    }

    func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A running simulator with a generated key, a manual clock, a cleartext listener, serving
/// `com.example.app`.
struct SimulatorFixture: Sendable {
    static let bundleID = "com.example.app"
    static let token = String(repeating: "ab", count: 32)

    let simulator: APNSSimulator
    let key: APNSSigningKey
    let clock: TestClock

    /// A fresh provider token, `iat` = the simulator's clock (or `issuedAt`).
    func jwt(key: APNSSigningKey? = nil, issuedAt: Date? = nil) throws -> String {
        try APNSProviderToken(signingKey: key ?? self.key, issuedAt: issuedAt ?? clock.now()).value
    }

    /// The connect deadline of these tests' clients. What they test comes after the connect; when
    /// the whole test run starts at once on two cores, a TLS connect on loopback has taken longer
    /// than the clients' default of 10 s, so they wait longer for it.
    static let connectTimeout: Duration = .seconds(60)

    /// A pool configuration with the tests' connect deadline.
    static func poolConfiguration() -> APNSConnectionPool.Configuration {
        var configuration = APNSConnectionPool.Configuration()
        configuration.connectTimeout = connectTimeout
        return configuration
    }

    /// An HTTP/2 client configuration with the tests' connect deadline.
    static func connectionConfiguration() -> HTTP2ClientConnection.Configuration {
        var configuration = HTTP2ClientConnection.Configuration()
        configuration.connectTimeout = connectTimeout
        return configuration
    }

    /// A client on its own pool, with a token manager on the simulator's clock (or `clock`), never
    /// retrying.
    func makeClient(
        key: APNSSigningKey? = nil,
        endpoint: APNSEndpoint? = nil,
        clock: (any HeraldClock)? = nil,
        poolConfiguration: APNSConnectionPool.Configuration = SimulatorFixture.poolConfiguration()
    ) -> (client: APNSClient, pool: APNSConnectionPool) {
        let key = key ?? self.key
        let pool = APNSConnectionPool(
            endpoint: endpoint ?? simulator.endpoint,
            tls: APNSTLSConfiguration(caFile: simulator.caFile, credentials: .token(key)),
            configuration: poolConfiguration,
            logger: Logger(label: "test.pool", level: .error)
        )
        let client = APNSClient(
            transport: pool,
            credentials: .token(key),
            retryPolicy: .never,
            clock: clock ?? self.clock,
            logger: Logger(label: "test.client", level: .error)
        )
        return (client, pool)
    }

    /// A raw HTTP/2 connection over TLS (trusting the simulator) or cleartext.
    func connect(cleartext: Bool = false) async throws -> HTTP2ClientConnection {
        if cleartext {
            return try await HTTP2ClientConnection.connect(
                host: "127.0.0.1",
                port: simulator.cleartextPort!,
                tls: nil as TLSContext?,
                configuration: Self.connectionConfiguration()
            )
        }
        var tls = TLSConfiguration.makeClient()
        tls.additionalTrustRootsFile = simulator.caFile
        return try await HTTP2ClientConnection.connect(
            host: "127.0.0.1",
            port: simulator.port,
            tls: tls,
            configuration: Self.connectionConfiguration()
        )
    }

    /// `POST /3/device/<token>` with a valid token, topic, push type and payload unless changed.
    func devicePush(
        token: String = SimulatorFixture.token,
        jwt: String?,
        headers: [(String, String)] = [],
        omitting omitted: Set<String> = [],
        payload: String = #"{"aps":{"alert":"Hello"}}"#
    ) -> HTTP2Request {
        var fields = HTTP2Headers()
        var defaults: [(String, String)] = [
            ("apns-topic", Self.bundleID), ("apns-push-type", "alert"), ("apns-priority", "10"),
        ]
        if let jwt { defaults.insert(("authorization", "bearer \(jwt)"), at: 0) }
        let overridden = Set(headers.map(\.0))
        for (name, value) in defaults where !omitted.contains(name) && !overridden.contains(name) {
            fields.add(name: name, value: value)
        }
        for (name, value) in headers { fields.add(name: name, value: value) }
        return HTTP2Request(path: "/3/device/\(token)", headers: fields, body: Array(payload.utf8))
    }
}

/// Runs a simulator for `body`, then cancels it.
func withSimulator<T: Sendable>(
    topics: [String] = [SimulatorFixture.bundleID],
    configure: (inout APNSSimulator.Configuration) -> Void = { _ in },
    _ body: (SimulatorFixture) async throws -> T
) async throws -> T {
    let clock = TestClock()
    let local = try APNSSimulator.inProcess(topics: topics) { configuration in
        configuration.cleartextPort = 0
        configuration.clock = clock
        configuration.logger = Logger(label: "test.simulator", level: .error)
        configure(&configuration)
    }
    let fixture = SimulatorFixture(simulator: local.simulator, key: local.signingKey, clock: clock)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await local.simulator.run() }
        do {
            let result = try await body(fixture)
            group.cancelAll()
            return result
        } catch {
            group.cancelAll()
            throw error
        }
    }
}

/// A signing key the simulator knows nothing about (or does, when added to its configuration).
func makeSigningKey(keyID: String = "OTHERKEY01", teamID: String = "OTHERTEAM1") throws -> APNSSigningKey {
    try APNSSigningKey(keyID: keyID, teamID: teamID, privateKey: P256PrivateKey())
}

extension HTTP2Response {
    /// The `reason` of the JSON body.
    var reason: String? { APNSErrorBody(parsing: body).reason?.rawValue }

    /// The 410 `timestamp`, in milliseconds.
    var timestampMilliseconds: Int64? {
        guard case .integer(let value)? = (try? APNSJSONValue(parsing: body))?["timestamp"] else { return nil }
        return value
    }
}

extension APNSSendResult {
    /// `(status, reason)`: 200 and nil when delivered.
    var answer: (status: Int, reason: String?) {
        switch self {
        case .delivered: (200, nil)
        case .rejected(let rejection): (rejection.status, rejection.reason.rawValue)
        }
    }
}
