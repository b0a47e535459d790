import APNs
import APNsTransport
import Foundation
import HeraldCore
import HeraldCrypto
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#endif

/// No log line holds a whole device token, an API key or a JWT, whatever the request: a real
/// `herald serve --simulator` at trace level gets the kinds of requests the end-to-end suites
/// send, and every line it writes is searched for each secret used.
@Suite struct LogSecrecyTests {
    static let topic = "org.example.secrecy"

    @Test("at trace level, no log line holds a device token, the API key or a JWT used in any request")
    func logsHoldNoSecrets() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-secrecy-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let apiKey = Self.hex(bytes: 32)
        let wrongKey = "wrong-key-" + Self.hex(bytes: 16)
        let herald = try HeraldProcess(
            arguments: ["serve", "--simulator", "--host", "127.0.0.1", "--port", "0"],
            environment: [
                "DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite", "TOPIC": Self.topic, "HERALD_RELAY": "1",
                "HERALD_API_KEYS": apiKey, "LOG_LEVEL": "trace",
            ]
        )
        let port = try await herald.listeningPort()
        let base = "http://127.0.0.1:\(port)"
        var tokens: [String] = []
        func newToken() -> String {
            tokens.append(Self.hex(bytes: 32))
            return tokens[tokens.count - 1]
        }

        // The relay, as Mastodon uses it.
        let relayed = newToken()
        #expect(try await Self.request("\(base)/push/\(relayed)/7", body: [1, 2, 3], encoding: "aes128gcm") == 202)
        // Unmatched routes: a token with no id, with a query, and a JWT as a path.
        let unmatched = newToken()
        #expect(try await Self.request("\(base)/push/\(unmatched)", body: [1], encoding: "aes128gcm") == 404)
        let queried = newToken()
        #expect(try await Self.request("\(base)/push/\(queried)?key=\(apiKey)", method: "GET") == 404)
        // /v1 with the key, and with a wrong one.
        let notified = [newToken(), newToken()]
        let body = #"{"tokens":["\#(notified[0])","\#(notified[1])"],"payload":{"aps":{"alert":"Hello"}}}"#
        let created = try await Self.request(
            "\(base)/v1/notifications",
            body: Array(body.utf8),
            headers: ["Authorization": "Bearer \(apiKey)", "Content-Type": "application/json"]
        )
        #expect((200..<300).contains(created))
        let refusedToken = newToken()
        let refusedBody = #"{"tokens":["\#(refusedToken)"],"payload":{"aps":{"alert":"Hello"}}}"#
        let refused = try await Self.request(
            "\(base)/v1/notifications",
            body: Array(refusedBody.utf8),
            headers: ["Authorization": "Bearer \(wrongKey)", "Content-Type": "application/json"]
        )
        #expect(refused == 401)

        // The simulator, as an APNs client uses it: a provider JWT (signed with a key it does
        // not trust) and a device token; and the same JWT as a path on the HTTP server.
        let key = try APNSSigningKey(keyID: "SIMULATED1", teamID: "SIMTEAM001", privateKey: P256PrivateKey())
        let jwt = try APNSProviderToken(signingKey: key, issuedAt: Date()).value
        #expect(try await Self.request("\(base)/v1/\(jwt)", method: "GET") == 404)
        let simulated = newToken()
        let simulatorStatus = try await Self.sendToSimulator(log: herald.log, key: key, jwt: jwt, token: simulated)
        #expect(simulatorStatus == 403)

        // Every line is out once the process has exited.
        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit(timeout: .seconds(20)) == 0)
        let log = herald.log
        // The access log did see these requests (trace and info lines are there to search).
        #expect(log.contains("route=unmatched"))
        #expect(log.contains(String(unmatched.prefix(8)) + "…"))
        for (name, secret) in [("API key", apiKey), ("wrong API key", wrongKey), ("JWT", jwt)]
            + tokens.map({ ("device token", $0) })
        {
            let lines = log.split(separator: "\n").filter { $0.contains(secret) }
            #expect(lines.isEmpty, "a log line holds the whole \(name): \(lines.joined(separator: "\n"))")
        }
        // Nor Herald's own provider tokens, which the test does not know: nothing JWT-shaped.
        let jwtShaped = log.split(separator: "\n").filter {
            $0.range(of: #"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"#, options: .regularExpression) != nil
        }
        #expect(jwtShaped.isEmpty, "JWT-shaped text in the log: \(jwtShaped.joined(separator: "\n"))")
    }

    /// Sends one push straight to the simulator named in the log, with `jwt` as its provider
    /// token, and returns the status.
    private static func sendToSimulator(
        log: String,
        key: APNSSigningKey,
        jwt: String,
        token: String
    ) async throws -> Int {
        let url = try #require(Self.value(of: "simulator", in: log))
        let caFile = try #require(Self.value(of: "ca_file", in: log))
        let endpoint = try #require(APNSEndpoint(url: url))
        let pool = APNSConnectionPool(
            endpoint: endpoint,
            tls: APNSTLSConfiguration(caFile: caFile, credentials: .token(key)),
            logger: Logger(label: "test.apns", level: .error),
            metrics: MetricsRegistry()
        )
        let response: APNSHTTPResponse
        do {
            response = try await pool.send(Self.simulatorRequest(jwt: jwt, token: token))
        } catch {
            await pool.shutdown()
            throw error
        }
        await pool.shutdown()
        return response.status
    }

    private static func simulatorRequest(jwt: String, token: String) -> APNSHTTPRequest {
        APNSHTTPRequest(
            method: "POST",
            path: "/3/device/\(token)",
            headers: [
                APNSHTTPHeader(name: "authorization", value: "bearer \(jwt)"),
                APNSHTTPHeader(name: "apns-topic", value: topic),
                APNSHTTPHeader(name: "apns-push-type", value: "alert"),
            ],
            body: Array(#"{"aps":{"alert":"Hello"}}"#.utf8)
        )
    }

    /// The value of `name=` in the log's text lines.
    private static func value(of name: String, in log: String) -> String? {
        guard let range = log.range(of: " \(name)=[^ \n]+", options: .regularExpression) else { return nil }
        return String(log[range].dropFirst(name.count + 2))
    }

    private static func request(
        _ url: String,
        method: String = "POST",
        body: [UInt8] = [],
        encoding: String? = nil,
        headers: [String: String] = [:]
    ) async throws -> Int {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        if let encoding { request.setValue(encoding, forHTTPHeaderField: "Content-Encoding") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if method == "POST" { request.httpBody = Data(body) }
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    private static func hex(bytes count: Int) -> String {
        SecureRandom.bytes(count).map { String(format: "%02x", $0) }.joined()
    }
}
