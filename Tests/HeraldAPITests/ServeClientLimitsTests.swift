import AsyncTestSupport
import ClientTokens
import Foundation
import HeraldCrypto
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 33, items 5 and 6, against a real `herald serve` on SQLite: `/v1/client`'s rate limits
/// per user and per address, and apps kept apart (the `app` claim, kids bound to apps).
@Suite("herald serve: client limits and apps")
struct ServeClientLimitsTests {
    static let key = "serve-limits-key-0123456789"
    static let secret = "serve-limits-secret-0123456789abcdef0123"
    static let issued = Date()

    static func token(_ user: String, app: String? = nil, signer: ClientTokenSigner? = nil) throws -> String {
        try (signer ?? .hs256(secret: Array(secret.utf8))).token(
            for: ClientTokenClaims(
                subject: user,
                app: app,
                issuedAt: issued,
                expiresAt: issued.addingTimeInterval(3_600)
            )
        )
    }

    static func temporaryDirectory(_ name: String) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(name)-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test func aUserOverTheirRateGets429WhileOtherUsersAndAPIKeyRoutesGoOnThenTheAddressLimitStopsAll()
        async throws
    {
        let directory = try Self.temporaryDirectory("client-limits")
        defer { try? FileManager.default.removeItem(at: directory) }
        // 3 a user and 6 an address, an hour each: nothing refills while the test runs.
        let herald = try HeraldProcess(
            arguments: ["serve", "--simulator", "--host", "127.0.0.1", "--port", "0"],
            environment: [
                "DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite", "TOPIC": "org.example.limits",
                "HERALD_API_KEYS": Self.key, "HERALD_CLIENT_TOKEN_SECRET": Self.secret,
                "HERALD_CLIENT_RATE_LIMIT": "1/h,3", "HERALD_CLIENT_IP_RATE_LIMIT": "1/h,6",
            ]
        )
        let base = "http://127.0.0.1:\(try await herald.listeningPort())"
        let devices = "\(base)/v1/client/devices"
        let u1 = try Self.token("u1")
        for _ in 0..<3 { #expect(try await send("GET", devices, token: u1).status == 200) }
        let limited = try await send("GET", devices, token: u1)
        #expect(limited.status == 429, "\(limited.body)")
        #expect(limited.body.contains(#""code":"rate_limited""#))
        #expect(limited.body.contains("HERALD_CLIENT_RATE_LIMIT"))
        // An hour a token, less the seconds since the bucket's first request.
        #expect((3_500...3_600).contains(Int(limited.headers["retry-after"] ?? "") ?? 0), "\(limited.headers)")
        // Another user goes on; the API key's routes are not counted.
        #expect(try await send("GET", devices, token: try Self.token("u2")).status == 200)
        for _ in 0..<3 { #expect(try await send("GET", "\(base)/v1/devices", token: Self.key).status == 200) }
        #expect(try await send("GET", devices, token: try Self.token("u3")).status == 200)
        // Six requests from this address: the seventh is refused before its token is looked at.
        let fromAddress = try await send("GET", devices, token: "not-even-a-token")
        #expect(fromAddress.status == 429, "\(fromAddress.body)")
        #expect(fromAddress.body.contains("HERALD_CLIENT_IP_RATE_LIMIT"))
        #expect((3_500...3_600).contains(Int(fromAddress.headers["retry-after"] ?? "") ?? 0))
        #expect(try await send("GET", "\(base)/v1/devices", token: Self.key).status == 200)
        let metrics = try await fetch("\(base)/metrics").body
        #expect(metrics.contains(#"herald_client_rate_limited_total{scope="user"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"herald_client_rate_limited_total{scope="ip"} 1"#))
        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit(timeout: .seconds(10)) == 0, "log:\n\(herald.log)")
    }

    @Test func withTwoAppsTokensNeedAnAppClaimAndABoundKidSignsOnlyForItsApps() async throws {
        let directory = try Self.temporaryDirectory("client-apps")
        defer { try? FileManager.default.removeItem(at: directory) }
        let apnsKey = directory.appendingPathComponent("key.p8").path
        try P256PrivateKey().pemRepresentation.write(toFile: apnsKey, atomically: true, encoding: .utf8)
        let apps = #"""
            {"apps": [
              {"bundle_id": "com.example.a", "team_id": "TEAMAAAAAA", "key_id": "KEYAAAAAAA", "key_file": "key.p8"},
              {"bundle_id": "com.example.b", "team_id": "TEAMAAAAAA", "key_id": "KEYAAAAAAA", "key_file": "key.p8"}
            ]}
            """#
        try apps.write(toFile: directory.appendingPathComponent("apps.json").path, atomically: true, encoding: .utf8)
        let boundKey = P256PrivateKey()
        let freeKey = P256PrivateKey()
        let keys: [String: Any] = [
            "bound-a": ["pem": boundKey.publicKey.pemRepresentation, "apps": ["com.example.a"]],
            "free": freeKey.publicKey.pemRepresentation,
        ]
        let keysFile = directory.appendingPathComponent("client-keys.json")
        try JSONSerialization.data(withJSONObject: keys).write(to: keysFile)
        var environment = [
            "DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite",
            "HERALD_APPS_FILE": directory.appendingPathComponent("apps.json").path,
            "HERALD_CLIENT_TOKEN_SECRET": Self.secret, "HERALD_CLIENT_TOKEN_KEYS_FILE": keysFile.path,
            // Nothing is pushed; port 1 on loopback would refuse a connect.
            "APNS_PRODUCTION_URL": "https://127.0.0.1:1", "APNS_SANDBOX_URL": "https://127.0.0.1:1",
        ]
        let herald = try HeraldProcess(
            arguments: ["serve", "--host", "127.0.0.1", "--port", "0"],
            environment: environment
        )
        let base = "http://127.0.0.1:\(try await herald.listeningPort())"
        let devices = "\(base)/v1/client/devices"
        let bound = ClientTokenSigner.es256(boundKey, keyID: "bound-a")
        let free = ClientTokenSigner.es256(freeKey, keyID: "free")
        let cases: [(String, String, Int, String?)] = [
            ("HS256 without app", try Self.token("u1"), 401, "app_claim_required"),
            ("free kid without app", try Self.token("u1", signer: free), 401, "app_claim_required"),
            ("HS256 for b", try Self.token("u1", app: "com.example.b"), 200, nil),
            (
                "bound kid for b", try Self.token("u1", app: "com.example.b", signer: bound), 401,
                "app_not_allowed_for_key"
            ),
            ("bound kid for a", try Self.token("u1", app: "com.example.a", signer: bound), 200, nil),
            ("bound kid without app", try Self.token("u1", signer: bound), 200, nil),
            ("free kid for b", try Self.token("u1", app: "com.example.b", signer: free), 200, nil),
        ]
        for (name, token, status, code) in cases {
            let response = try await send("GET", devices, token: token)
            #expect(response.status == status, "\(name): \(response.body)")
            if let code { #expect(response.body.contains(#""code":"\#(code)""#), "\(name): \(response.body)") }
        }
        // Without an app claim, the bound kid's token acts for its one app.
        let device = String(repeating: "ab", count: 32)
        let registered = try await send(
            "PUT",
            "\(devices)/\(device)",
            token: try Self.token("u1", signer: bound),
            body: "{}"
        )
        #expect(registered.status == 201, "\(registered.body)")
        #expect(registered.body.contains(#""app":"com.example.a""#))
        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit(timeout: .seconds(10)) == 0, "log:\n\(herald.log)")

        // A kid bound to an app this server does not serve stops the start, naming both.
        let typo: [String: Any] = ["bound-a": ["pem": boundKey.publicKey.pemRepresentation, "apps": ["com.example.c"]]]
        try JSONSerialization.data(withJSONObject: typo).write(to: keysFile)
        environment["DATABASE_URL"] = "sqlite:\(directory.path)/second.sqlite"
        let refused = try HeraldProcess(
            arguments: ["serve", "--host", "127.0.0.1", "--port", "0"],
            environment: environment
        )
        #expect(try await refused.waitForExit(timeout: .seconds(10)) == 2)
        #expect(refused.log.contains(#"the kid "bound-a" is bound to the app com.example.c"#), "\(refused.log)")
    }

    /// One request with a bearer credential; status, body and headers (names lower-cased).
    func send(
        _ method: String,
        _ url: String,
        token: String,
        body: String? = nil
    ) async throws -> (status: Int, body: String, headers: [String: String]) {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(body.utf8)
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as? HTTPURLResponse
        var headers: [String: String] = [:]
        for (name, value) in http?.allHeaderFields ?? [:] {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return (http?.statusCode ?? 0, String(decoding: data, as: UTF8.self), headers)
    }
}
