import AsyncTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `herald serve` end to end with client tokens minted by `herald client-token`: an app registers,
/// lists and removes its user's devices on /v1/client, and the two credentials stay apart.
@Suite("herald serve: client tokens")
struct ServeClientDevicesTests {
    static let key = "serve-client-key-0123456789"
    static let secret = "serve-client-secret-0123456789abcdef0123"

    @Test func clientTokensRegisterListAndRemoveTheirUsersDevices() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-client-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let environment = [
            "DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite", "TOPIC": "org.example.client",
            "HERALD_API_KEYS": Self.key, "HERALD_CLIENT_TOKEN_SECRET": Self.secret, "HERALD_CLIENT_TAGS": "news",
        ]
        let herald = try HeraldProcess(
            arguments: ["serve", "--simulator", "--host", "127.0.0.1", "--port", "0"],
            environment: environment
        )
        let base = "http://127.0.0.1:\(try await herald.listeningPort())"
        let u1 = try await Self.mint(["--user", "u1"])
        let u2 = try await Self.mint(["--user", "u2", "--ttl", "10m"])
        let limited = try await Self.mint(["--user", "u1", "--app", "org.example.other"])
        let device = String(repeating: "ab", count: 32)
        let path = "\(base)/v1/client/devices/\(device)"

        let created = try await send("PUT", path, token: u1, body: #"{"tags": ["news"], "platform": "ios"}"#)
        #expect(created.status == 201, "\(created.body)")
        #expect(created.body.contains(#""user_id":"u1""#))
        #expect(created.body.contains(#""app":"org.example.client""#))
        #expect(try await send("PUT", path, token: u1, body: "{}").status == 200)
        let withUser = try await send("PUT", path, token: u1, body: #"{"user_id": "u2"}"#)
        #expect(withUser.status == 400, "user_id comes from the token: \(withUser.body)")
        let otherApp = try await send("PUT", path, token: limited, body: #"{"app": "org.example.client"}"#)
        #expect(otherApp.status == 403)
        #expect(otherApp.body.contains(#""code":"wrong_app""#))

        let mine = try await send("GET", "\(base)/v1/client/devices", token: u1)
        #expect(mine.status == 200)
        #expect(mine.body.contains(device))
        let theirs = try await send("GET", "\(base)/v1/client/devices", token: u2)
        #expect(theirs.status == 200)
        #expect(!theirs.body.contains(device))

        // Another user's device answers as an unknown one (ServeClientDevicesHostileTests has more).
        let stolen = try await send("DELETE", path, token: u2)
        #expect(stolen.status == 404, "\(stolen.body)")
        #expect(stolen.body.contains(#""code":"not_found""#))
        let unknown = try await send(
            "DELETE",
            "\(base)/v1/client/devices/\(String(repeating: "cd", count: 32))",
            token: u2
        )
        #expect(unknown.status == 404)
        #expect(unknown.body == stolen.body)
        #expect(try await send("DELETE", path, token: u1).status == 204)

        // API keys do not open /v1/client, and client tokens open nothing else.
        let withKey = try await send("GET", "\(base)/v1/client/devices", token: Self.key)
        #expect(withKey.status == 401)
        #expect(withKey.body.contains(#""code":"malformed""#))
        #expect(withKey.headers["www-authenticate"] == #"Bearer error="invalid_token""#)
        let onDevices = try await send("GET", "\(base)/v1/devices", token: u1)
        #expect(onDevices.status == 401)
        #expect(onDevices.body.contains(#""code":"invalid_api_key""#))
        let onNotifications = try await send("GET", "\(base)/v1/notifications", token: u1)
        #expect(onNotifications.status == 401)
        let forged = try await send("GET", "\(base)/v1/client/devices", token: String(u1.dropLast(4)) + "AAAA")
        #expect(forged.status == 401)
        #expect(forged.body.contains(#""code":"bad_signature""#))

        #expect(!herald.log.contains(u1) && !herald.log.contains(u2), "a client token must not be logged")
        #expect(!herald.log.contains(Self.secret))
        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit(timeout: .seconds(10)) == 0, "log:\n\(herald.log)")
    }

    /// A token from `herald client-token` with this test's secret.
    static func mint(_ arguments: [String]) async throws -> String {
        let result = try await JobsCommandTests.herald(
            ["client-token"] + arguments,
            environment: ["HERALD_CLIENT_TOKEN_SECRET": secret]
        )
        try #require(result.status == 0, "herald client-token: \(result.error)")
        return result.output.trimmingCharacters(in: .newlines)
    }

    /// One request with a bearer credential; status, body and headers.
    func send(
        _ method: String,
        _ url: String,
        token: String,
        body: String? = nil
    ) async throws
        -> (status: Int, body: String, headers: [String: String])
    {
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
