import ClientTokens
import Foundation
import HeraldCore
import HeraldCrypto
import Testing

@Suite struct ClientTokenConfigurationTests {
    @Test func unsetMeansNotConfigured() throws {
        let configuration = try ClientTokenConfiguration.load(environment: [:])
        #expect(!configuration.isConfigured)
        #expect(configuration.audience == "herald")
    }

    @Test func aShortSecretIsAStartUpErrorNamingTheVariable() {
        do {
            _ = try ClientTokenConfiguration.load(environment: ["HERALD_CLIENT_TOKEN_SECRET": "too-short"])
            Issue.record("a 9-byte secret was accepted")
        } catch {
            #expect(error.problems.count == 1)
            #expect(error.problems.first?.contains("HERALD_CLIENT_TOKEN_SECRET") == true)
            #expect(error.problems.first?.contains("too-short") == false, "the secret itself is never shown")
        }
    }

    @Test func readsTheSecretAudienceAndKeysFile() throws {
        let key = P256PrivateKey()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-ct-keys-\(UUID()).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let json = try JSONSerialization.data(withJSONObject: ["backend-1": key.publicKey.pemRepresentation])
        try json.write(to: URL(fileURLWithPath: path))
        let configuration = try ClientTokenConfiguration.load(environment: [
            "HERALD_CLIENT_TOKEN_SECRET": String(repeating: "s", count: 32),
            "HERALD_CLIENT_TOKEN_KEYS_FILE": path,
            "HERALD_CLIENT_TOKEN_AUDIENCE": "push.example.com",
        ])
        #expect(configuration.secret?.count == 32)
        #expect(configuration.publicKeys == ["backend-1": key.publicKey])
        #expect(configuration.audience == "push.example.com")
        #expect(!configuration.description.contains("sss"), "the secret never reaches description")
    }

    @Test func badKeysFilesSayWhatToFix() throws {
        let cases: [(String, String)] = [
            ("not json", "not valid JSON"),
            (#"{"a": "x", "a": "y"}"#, "not valid JSON"),
            ("[]", "one JSON object"),
            ("{}", "1 to 100 keys"),
            (#"{"k1": "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"}"#, "kid \"k1\""),
            (#"{"": "x"}"#, "is not usable"),
        ]
        for (text, expected) in cases {
            do {
                _ = try ClientTokenConfiguration.parseKeys(Array(text.utf8), source: "HERALD_CLIENT_TOKEN_KEYS_FILE f")
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.problems.joined().contains(expected), "\(text): \(error.problems)")
                #expect(error.problems.joined().contains("HERALD_CLIENT_TOKEN_KEYS_FILE"))
            }
        }
        #expect(throws: ConfigurationError.self) {
            _ = try ClientTokenConfiguration.load(environment: [
                "HERALD_CLIENT_TOKEN_KEYS_FILE": "/nonexistent/keys.json"
            ])
        }
    }
}
