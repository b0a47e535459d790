import APNs
import Foundation
import HTTP2
import HeraldCore
import HeraldCrypto
import HeraldIO
import Synchronization

/// An in-process APNs: ``HTTP2Server`` over TLS (a certificate made at run time, trusted by the
/// client through a temporary CA file) that applies APNs' request rules through ``FakeAPNs`` and
/// its connection rules itself:
///
/// - SETTINGS_MAX_CONCURRENT_STREAMS 1 on a new connection, raised (to ``raisedStreamLimit``)
///   after the connection's first successful request, as APNs does for token authentication;
/// - a new provider token more than once per 20 minutes on one connection →
///   429 `TooManyProviderTokenUpdates`;
/// - token or certificate authentication (the latter requires a TLS client certificate and
///   ignores `authorization`).
///
/// Every request is recorded with its pseudo-headers, header fields, body, stream and connection;
/// tests can intercept requests to answer differently, hold them, or send GOAWAY.
final class TestAPNsServer: Sendable {
    /// How clients authenticate.
    enum Authentication: Sendable {
        /// Provider tokens, checked against ``Fixtures/p8PublicKey``.
        case token
        /// A TLS client certificate, trusted as its own root.
        case certificate(trustedClientCertificatePEM: String)
    }

    /// What an interceptor decides for a request.
    enum Interception: Sendable {
        /// Apply the APNs rules.
        case proceed
        /// Answer this (counted as answered).
        case respond(HTTP2ServerResponse)
        /// The request was above a GOAWAY's last-stream-id: not processed, not counted; whatever
        /// is returned is dropped by the server.
        case unprocessed
    }

    typealias Interceptor = @Sendable (Received) async -> Interception

    /// One request as it arrived.
    struct Received: Sendable {
        var method: String
        var path: String
        var authority: String
        var scheme: String
        var headers: HTTP2Headers
        var body: [UInt8]
        var streamID: Int
        var connection: HTTP2ServerConnection
        var connectionID: Int { connection.id }
        var apnsID: String? { headers["apns-id"] }
        var authorization: String? { headers["authorization"] }
    }

    /// One answer the server gave (rules or interceptor), for counting deliveries.
    struct Answer: Sendable {
        var apnsID: String?
        var status: Int
        var connectionID: Int
        var streamID: Int
    }

    private struct State {
        var received: [Received] = []
        var answers: [Answer] = []
        /// Connections whose stream limit was raised after their first success.
        var raised: Set<Int> = []
        /// Per connection: the provider tokens seen, and when (server time) the newest first came.
        var tokens: [Int: (seen: Set<String>, lastNew: Date)] = [:]
        var allTokens: Set<String> = []
        var current: [Int: Int] = [:]
        var peak: [Int: Int] = [:]
        var peakBeforeRaise: [Int: Int] = [:]
        var connections: Set<Int> = []
        var tokenUpdatesRefused = 0
    }

    let fake: FakeAPNs
    let authentication: Authentication
    let raisedStreamLimit: Int
    private let wallClock: @Sendable () -> Date
    private let serverKey: APNSSigningKey
    private let interceptor: Mutex<Interceptor?> = Mutex(nil)
    private let state = Mutex(State())
    private let running = Mutex<(server: HTTP2Server, task: Task<Void, any Error>)?>(nil)
    private let boundPort = Mutex(0)

    /// The port the server listens on (kept across ``restart()``).
    var port: Int { boundPort.withLock { $0 } }
    /// The CA file clients trust (`APNS_CA_FILE`).
    var caFile: String { TestIdentity.shared.caFile }
    /// The endpoint to give a pool.
    var endpoint: APNSEndpoint { APNSEndpoint(host: "127.0.0.1", port: port) }

    /// - Parameters:
    ///   - fake: the request rules; one fake may serve several servers (push and management).
    ///   - wallClock: the server's time, for the 20-minute token-update rule.
    init(
        fake: FakeAPNs,
        authentication: Authentication = .token,
        raisedStreamLimit: Int = 1000,
        wallClock: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        self.fake = fake
        self.authentication = authentication
        self.raisedStreamLimit = raisedStreamLimit
        self.wallClock = wallClock
        self.serverKey = try Fixtures.signingKey()
    }

    /// A fake with the fixtures' bundle, key and team, on `wallClock`.
    static func makeFake(wallClock: @escaping @Sendable () -> Date = { Date() }) throws -> FakeAPNs {
        FakeAPNs(
            bundleID: Fixtures.bundleID,
            keyID: Fixtures.keyID,
            teamID: Fixtures.teamID,
            publicKey: try P256PublicKey(pemRepresentation: Fixtures.p8PublicKey),
            wallClock: wallClock
        )
    }

    // MARK: Lifecycle

    /// Binds (port 0 the first time, the same port after) and serves until ``stop()``.
    func start() throws {
        var configuration = HTTP2Server.Configuration()
        configuration.port = port
        configuration.maxConcurrentStreams = 1
        let server = try HTTP2Server(configuration: configuration, tls: try makeTLSContext()) { [self] request in
            await handle(request)
        }
        boundPort.withLock { $0 = server.port }
        let task = Task { try await server.run() }
        running.withLock { $0 = (server, task) }
    }

    /// Kills the server: the listener closes and every connection is dropped without GOAWAY.
    func stop() async {
        let running = running.withLock { value in
            defer { value = nil }
            return value
        }
        guard let task = running?.task else { return }
        task.cancel()
        _ = await task.result
    }

    /// Starts again on the same port.
    func restart() throws {
        try start()
    }

    private func makeTLSContext() throws -> TLSContext {
        let identity = TestIdentity.shared
        var configuration = TLSConfiguration.makeServer(
            certificateChainPEM: identity.server.certificatePEM,
            privateKeyPEM: identity.server.privateKeyPEM
        )
        if case .certificate(let trusted) = authentication {
            configuration.certificateVerification = .full
            configuration.trustSystemRoots = false
            configuration.additionalTrustRootsPEM = trusted
        }
        return try TLSContext(configuration: configuration)
    }

    // MARK: Observations

    func intercept(_ interceptor: Interceptor?) {
        self.interceptor.withLock { $0 = interceptor }
    }

    var received: [Received] { state.withLock { $0.received } }
    var requestCount: Int { state.withLock { $0.received.count } }
    var answers: [Answer] { state.withLock { $0.answers } }
    /// Distinct provider tokens presented, over all connections.
    var distinctTokens: Set<String> { state.withLock { $0.allTokens } }
    /// Connections that sent at least one request.
    var connectionIDs: Set<Int> { state.withLock { $0.connections } }
    /// The most requests handled at once on any connection.
    var peakConcurrency: Int { state.withLock { $0.peak.values.max() ?? 0 } }
    /// Per connection: the most requests handled at once.
    var peakConcurrencyByConnection: [Int: Int] { state.withLock { $0.peak } }
    /// The most requests handled at once on a connection before its limit was raised.
    var peakConcurrencyBeforeRaise: Int { state.withLock { $0.peakBeforeRaise.values.max() ?? 0 } }
    var tokenUpdatesRefused: Int { state.withLock { $0.tokenUpdatesRefused } }

    /// Requests currently inside the handler.
    var inFlight: Int { state.withLock { $0.current.values.reduce(0, +) } }

    // MARK: Handling

    private func handle(_ request: HTTP2ServerRequest) async -> HTTP2ServerResponse {
        let received = Received(
            method: request.method,
            path: request.path,
            authority: request.authority,
            scheme: request.scheme,
            headers: request.headers,
            body: request.body,
            streamID: request.streamID,
            connection: request.connection
        )
        let connectionID = request.connection.id
        state.withLock { state in
            state.received.append(received)
            state.connections.insert(connectionID)
            state.current[connectionID, default: 0] += 1
            let current = state.current[connectionID]!
            state.peak[connectionID] = max(state.peak[connectionID] ?? 0, current)
            if !state.raised.contains(connectionID) {
                state.peakBeforeRaise[connectionID] = max(state.peakBeforeRaise[connectionID] ?? 0, current)
            }
        }
        defer { state.withLock { $0.current[connectionID, default: 1] -= 1 } }

        let interception = await interceptor.withLock { $0 }?(received) ?? .proceed
        let response: HTTP2ServerResponse
        switch interception {
        case .unprocessed:
            return HTTP2ServerResponse(status: 500)
        case .respond(let answer):
            response = answer
        case .proceed:
            response = await applyRules(received)
        }
        state.withLock { state in
            state.answers.append(
                Answer(
                    apnsID: received.apnsID,
                    status: response.status,
                    connectionID: connectionID,
                    streamID: received.streamID
                )
            )
        }
        if response.status == 200, state.withLock({ $0.raised.insert(connectionID).inserted }) {
            // APNs raises the stream limit once a connection's first authenticated request succeeds.
            request.connection.setMaxConcurrentStreams(raisedStreamLimit)
        }
        return response
    }

    private func applyRules(_ request: Received) async -> HTTP2ServerResponse {
        var headers = request.headers.map { APNSHTTPHeader(name: $0.name, value: $0.value) }
        switch authentication {
        case .token:
            if let token = request.authorization,
                let refusal = checkTokenUpdate(token, connection: request.connectionID)
            {
                return refusal
            }
        case .certificate:
            // The TLS client certificate authenticated the connection; APNs ignores
            // `authorization` there. The rules' token check is satisfied with a server token.
            headers.removeAll { $0.name == "authorization" }
            guard let token = try? APNSProviderToken(signingKey: serverKey, issuedAt: wallClock()) else {
                return HTTP2ServerResponse(status: 500)
            }
            headers.insert(APNSHTTPHeader(name: "authorization", value: token.authorizationHeaderValue), at: 0)
        }
        let apnsRequest = APNSHTTPRequest(
            method: request.method,
            path: request.path,
            headers: headers,
            body: request.body
        )
        guard let answer = try? await fake.send(apnsRequest) else { return HTTP2ServerResponse(status: 500) }
        var fields = HTTP2Headers()
        for header in answer.headers { fields.add(name: header.name, value: header.value) }
        return HTTP2ServerResponse(status: answer.status, headers: fields, body: answer.body)
    }

    /// APNs: a connection may present a new provider token at most once per 20 minutes.
    private func checkTokenUpdate(_ authorization: String, connection: Int) -> HTTP2ServerResponse? {
        let now = wallClock()
        let refused = state.withLock { state -> Bool in
            state.allTokens.insert(authorization)
            guard var entry = state.tokens[connection] else {
                state.tokens[connection] = ([authorization], now)
                return false
            }
            if entry.seen.contains(authorization) { return false }
            if now.timeIntervalSince(entry.lastNew) < 20 * 60 {
                state.tokenUpdatesRefused += 1
                return true
            }
            entry.seen.insert(authorization)
            entry.lastNew = now
            state.tokens[connection] = entry
            return false
        }
        guard refused else { return nil }
        return HTTP2ServerResponse(status: 429, body: Array(#"{"reason":"TooManyProviderTokenUpdates"}"#.utf8))
    }
}

/// The test server's TLS identity (a self-signed certificate that is its own CA, with SANs
/// `localhost` and `127.0.0.1`) written to a temporary CA file; and a client certificate for
/// certificate-based authentication. Made once per test run.
struct TestIdentity: Sendable {
    let server: SelfSignedCertificate
    let caFile: String
    let client: SelfSignedCertificate

    static let shared: TestIdentity = {
        do {
            let server = try SelfSignedCertificate.generate(
                commonName: "Herald test APNs",
                subjectAlternativeNames: ["localhost", "127.0.0.1"],
                key: P256PrivateKey()
            )
            let client = try SelfSignedCertificate.generate(
                commonName: "Apple Push Services: com.example.app",
                subjectAlternativeNames: [],
                key: P256PrivateKey()
            )
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("herald-apns-e2e-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let caFile = directory.appendingPathComponent("ca.pem").path
            try server.certificatePEM.write(toFile: caFile, atomically: true, encoding: .utf8)
            return TestIdentity(server: server, caFile: caFile, client: client)
        } catch {
            fatalError("cannot make the test TLS identity: \(error)")
        }
    }()
}
