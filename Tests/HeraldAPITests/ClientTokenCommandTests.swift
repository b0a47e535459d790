import ClientTokens
import Foundation
import HeraldCrypto
import Testing

/// `herald client-token`, and the client-token settings as `herald config` and `herald serve`
/// read them.
@Suite struct ClientTokenCommandTests {
    static let secret = "cli-test-secret-0123456789abcdef0123456789"

    @Test func printsAnHS256TokenTheServerAccepts() async throws {
        let result = try await JobsCommandTests.herald(
            ["client-token", "--user", "u1", "--ttl", "1h", "--app", "com.example.app"],
            environment: ["HERALD_CLIENT_TOKEN_SECRET": Self.secret]
        )
        #expect(result.status == 0, "stderr: \(result.error)")
        let token = result.output.trimmingCharacters(in: .newlines)
        let verifier = ClientTokenVerifier(ClientTokenConfiguration(secret: Array(Self.secret.utf8)))
        let claims = try verifier.verify(token, now: Date())
        #expect(claims.subject == "u1")
        #expect(claims.app == "com.example.app")
        #expect(claims.expiresAt.timeIntervalSince(claims.issuedAt) == 3_600)
    }

    @Test func signsES256WithAPrivateKeyFileWhenOnlyPublicKeysAreConfigured() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-ct-cli-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = P256PrivateKey()
        let keyPath = directory.appendingPathComponent("private.pem").path
        let keysPath = directory.appendingPathComponent("keys.json").path
        try Data(key.pemRepresentation.utf8).write(to: URL(fileURLWithPath: keyPath))
        try JSONSerialization.data(withJSONObject: ["backend-1": key.publicKey.pemRepresentation])
            .write(to: URL(fileURLWithPath: keysPath))
        let environment = ["HERALD_CLIENT_TOKEN_KEYS_FILE": keysPath, "HERALD_CLIENT_TOKEN_SECRET": nil]

        let refused = try await JobsCommandTests.herald(["client-token", "--user", "u1"], environment: environment)
        #expect(refused.status == 2)
        #expect(refused.error.contains("--private-key-file PEM --kid KID"), "stderr: \(refused.error)")

        let result = try await JobsCommandTests.herald(
            ["client-token", "--user", "u1", "--ttl", "15m", "--private-key-file", keyPath, "--kid", "backend-1"],
            environment: environment
        )
        #expect(result.status == 0, "stderr: \(result.error)")
        let verifier = ClientTokenVerifier(ClientTokenConfiguration(publicKeys: ["backend-1": key.publicKey]))
        #expect(try verifier.verify(result.output.trimmingCharacters(in: .newlines), now: Date()).subject == "u1")

        let wrongKid = try await JobsCommandTests.herald(
            ["client-token", "--user", "u1", "--private-key-file", keyPath, "--kid", "backend-2"],
            environment: environment
        )
        #expect(wrongKid.status == 2)
        #expect(wrongKid.error.contains("unknown_key"), "stderr: \(wrongKid.error)")
    }

    @Test func refusesBadInputWithExit2() async throws {
        let environment = ["HERALD_CLIENT_TOKEN_SECRET": Self.secret]
        let cases: [([String], [String: String?], String)] = [
            (["client-token"], environment, "--user ID is required"),
            (["client-token", "--user", "u1", "--ttl", "31d"], environment, "--ttl 31d is not valid"),
            (["client-token", "--user", "u1", "--ttl", "soon"], environment, "--ttl soon is not valid"),
            (["client-token", "--user", "u1", "--app", "com example"], environment, "app must be a bundle id"),
            (
                ["client-token", "--user", "u1"],
                ["HERALD_CLIENT_TOKEN_SECRET": nil, "HERALD_CLIENT_TOKEN_KEYS_FILE": nil],
                "client tokens are not configured"
            ),
            (["client-token", "--user", "u1"], ["HERALD_CLIENT_TOKEN_SECRET": "short"], "HERALD_CLIENT_TOKEN_SECRET"),
        ]
        for (arguments, environment, expected) in cases {
            let result = try await JobsCommandTests.herald(arguments, environment: environment)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.output.isEmpty)
            #expect(result.error.contains(expected), "\(arguments): \(result.error)")
        }
    }

    /// A secret shorter than 32 bytes stops `herald serve` at start-up, naming the variable.
    @Test func serveRefusesAShortSecret() async throws {
        let result = try await JobsCommandTests.herald(
            ["serve", "--port", "0"],
            environment: ["HERALD_CLIENT_TOKEN_SECRET": "0123456789", "DATABASE_URL": "sqlite::memory:"]
        )
        #expect(result.status == 2)
        #expect(
            result.error.contains("HERALD_CLIENT_TOKEN_SECRET is 10 bytes long: use at least 32"),
            "\(result.error)"
        )
        #expect(!result.error.contains("0123456789 "))
    }

    /// `herald config` shows the secret only as its size.
    @Test func configRedactsTheSecret() async throws {
        let result = try await JobsCommandTests.herald(
            ["config"],
            environment: [
                "HERALD_CLIENT_TOKEN_SECRET": Self.secret, "HERALD_CLIENT_TOKEN_AUDIENCE": "push.example.com",
            ]
        )
        #expect(result.status == 0, "stderr: \(result.error)")
        #expect(result.output.contains("HERALD_CLIENT_TOKEN_SECRET=(set, \(Self.secret.utf8.count) bytes, redacted)"))
        #expect(result.output.contains("HERALD_CLIENT_TOKEN_AUDIENCE=push.example.com"))
        #expect(!result.output.contains(Self.secret))
    }
}
