import ClientTokens
import Foundation
import HeraldCore
import HeraldCrypto
import Testing

/// Item 6 of issue 33: a kid bound to apps in HERALD_CLIENT_TOKEN_KEYS_FILE signs only for them,
/// and a server of several apps requires the `app` claim.
@Suite struct ClientTokenAppBindingTests {
    static let keyA = P256PrivateKey()
    static let keyAB = P256PrivateKey()
    static let keyAny = P256PrivateKey()

    /// A keys file in both forms: `a` bound to one app, `ab` to two, `any` plain.
    static func keysFile() throws -> [UInt8] {
        let object: [String: Any] = [
            "a": ["pem": keyA.publicKey.pemRepresentation, "apps": ["com.example.a"]],
            "ab": ["pem": keyAB.publicKey.pemRepresentation, "apps": ["com.example.a", "com.example.b"]],
            "any": keyAny.publicKey.pemRepresentation,
        ]
        return [UInt8](try JSONSerialization.data(withJSONObject: object))
    }

    static func configuration(requiresAppClaim: Bool = false) throws -> ClientTokenConfiguration {
        let file = try ClientTokenKeysFile.parse(try keysFile(), source: "keys")
        var configuration = ClientTokenConfiguration(secret: secret, publicKeys: file.keys)
        configuration.keyApps = file.apps
        configuration.requiresAppClaim = requiresAppClaim
        return configuration
    }

    @Test func theFileTakesBothFormsAndKeepsTheBindings() throws {
        let file = try ClientTokenKeysFile.parse(try Self.keysFile(), source: "keys")
        #expect(file.keys.keys.sorted() == ["a", "ab", "any"])
        #expect(file.apps == ["a": ["com.example.a"], "ab": ["com.example.a", "com.example.b"]])
    }

    /// (kid, app claim, requires app claim) → the app of the verified claims, or the refusal.
    @Test(
        arguments: [
            ("a", "com.example.a", false, "com.example.a"),
            ("a", nil, false, "com.example.a"),
            ("a", "com.example.b", false, "app_not_allowed_for_key"),
            ("ab", "com.example.b", false, "com.example.b"),
            ("ab", nil, false, "app_claim_required"),
            ("any", "com.example.z", false, "com.example.z"),
            ("any", nil, false, "-"),
            ("any", nil, true, "app_claim_required"),
            ("any", "com.example.b", true, "com.example.b"),
            ("a", nil, true, "com.example.a"),
            ("hs256", nil, true, "app_claim_required"),
            ("hs256", "com.example.b", true, "com.example.b"),
            ("hs256", nil, false, "-"),
        ] as [(String, String?, Bool, String)]
    )
    func appRules(_ kid: String, _ app: String?, _ requiresAppClaim: Bool, _ expected: String) throws {
        let signer: ClientTokenSigner =
            switch kid {
            case "a": .es256(Self.keyA, keyID: "a")
            case "ab": .es256(Self.keyAB, keyID: "ab")
            case "any": .es256(Self.keyAny, keyID: "any")
            default: .hs256(secret: secret)
            }
        let token = try signer.token(for: claims(app: app))
        let verifier = ClientTokenVerifier(try Self.configuration(requiresAppClaim: requiresAppClaim))
        do throws(ClientTokenError) {
            let verified = try verifier.verify(token, now: epoch)
            #expect((verified.app ?? "-") == expected)
        } catch {
            #expect(error.reason.rawValue == expected, "\(error.message)")
            #expect(!error.message.isEmpty)
            if error.reason == .appNotAllowedForKey {
                #expect(error.message.contains("\"a\"") && error.message.contains("com.example.a"))
            }
        }
    }

    @Test func badEntriesNameTheKidAndWhatToWrite() throws {
        let pem = Self.keyA.publicKey.pemRepresentation
        func entry(_ value: Any) throws -> String {
            String(decoding: try JSONSerialization.data(withJSONObject: ["k1": value]), as: UTF8.self)
        }
        let cases: [(String, String)] = [
            (try entry(["pem": pem, "apps": []]), "apps must list 1 to 100"),
            (try entry(["pem": pem, "apps": ["not a bundle id"]]), "is not a bundle id"),
            (try entry(["pem": pem, "apps": ["com.a", "com.a"]]), "twice"),
            (try entry(["pem": pem, "apps": "com.a"]), "not an array of strings"),
            (try entry(["pem": pem, "apps": [1]]), "not an array of strings"),
            (try entry(["apps": ["com.a"]]), "has no pem"),
            (try entry(["pem": pem, "app": ["com.a"]]), "keep only pem and apps"),
            (try entry(["pem": 5]), "has no pem"),
            (try entry(5), "must map to a PEM string"),
            (try entry(["pem": "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"]), "not a P-256"),
            (try entry(["pem": pem, "apps": (0..<101).map { "com.a\($0)" }]), "apps must list 1 to 100"),
            (#"{"k1": {"pem": "x", "apps": [["deep"]]}}"#, "not valid JSON"),
        ]
        for (text, expected) in cases {
            do {
                _ = try ClientTokenKeysFile.parse(Array(text.utf8), source: "HERALD_CLIENT_TOKEN_KEYS_FILE f")
                Issue.record("accepted \(text)")
            } catch {
                let message = error.problems.joined(separator: "\n")
                #expect(message.contains(expected), "\(text): \(message)")
                if expected != "not valid JSON" { #expect(message.contains("kid \"k1\""), "\(message)") }
            }
        }
    }

    @Test func aBindingToAnAppTheServerDoesNotServeIsNamed() throws {
        let configuration = try Self.configuration()
        let problems = configuration.unknownBoundApps(configured: ["com.example.a"])
        #expect(problems.count == 1)
        #expect(problems.first?.contains("\"ab\" is bound to the app com.example.b") == true)
        #expect(configuration.unknownBoundApps(configured: ["com.example.a", "com.example.b"]).isEmpty)
    }
}
