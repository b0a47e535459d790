import APNs
import CloudKit
import Foundation
import HeraldCore
import HeraldCrypto
import Testing

/// CLOUDKIT_* and the apps file's `cloudkit` objects.
@Suite struct CloudKitSettingsTests {
    static let key = P256PrivateKey()

    static func files(_ extra: [String: String] = [:]) -> (String) throws -> String {
        let files = ["/keys/eckey.pem": key.pemRepresentation].merging(extra) { _, new in new }
        return { path in
            guard let text = files[path] else { throw CocoaError(.fileNoSuchFile) }
            return text
        }
    }

    @Test func theDefaultKeyComesFromTheVariables() throws {
        let settings = try CloudKitSettings.load(
            environment: ["CLOUDKIT_KEY_ID": "abc", "CLOUDKIT_PRIVATE_KEY_FILE": "/keys/eckey.pem"],
            readFile: Self.files()
        )
        #expect(settings.defaultKey?.keyID == "abc")
        #expect(settings.defaultKey?.publicKey == Self.key.publicKey)
        #expect(settings.clientConfiguration.url == "https://api.apple-cloudkit.com")
        let inline = try CloudKitSettings.load(
            environment: [
                "CLOUDKIT_KEY_ID": "abc",
                "CLOUDKIT_PRIVATE_KEY": Self.key.pemRepresentation.replacingOccurrences(of: "\n", with: "\\n"),
                "CLOUDKIT_URL": "https://127.0.0.1:8443",
            ],
            readFile: Self.files()
        )
        #expect(inline.defaultKey?.publicKey == Self.key.publicKey)
        #expect(inline.clientConfiguration.url == "https://127.0.0.1:8443")
        #expect(try CloudKitSettings.load(environment: [:], readFile: Self.files()).defaultKey == nil)
    }

    @Test func problemsNameTheVariable() {
        let cases: [([String: String], String)] = [
            (["CLOUDKIT_KEY_ID": "abc"], "CLOUDKIT_PRIVATE_KEY_FILE"),
            (["CLOUDKIT_PRIVATE_KEY_FILE": "/keys/eckey.pem"], "CLOUDKIT_KEY_ID"),
            (["CLOUDKIT_KEY_ID": "abc", "CLOUDKIT_PRIVATE_KEY_FILE": "/missing.pem"], "cannot be read"),
            (["CLOUDKIT_KEY_ID": "abc", "CLOUDKIT_PRIVATE_KEY": "junk"], "not a P-256 private key"),
            (["CLOUDKIT_URL": "https://x/some/path"], "CLOUDKIT_URL"),
            (["CLOUDKIT_CA_FILE": "/missing.pem"], "CLOUDKIT_CA_FILE"),
        ]
        for (environment, expected) in cases {
            do {
                _ = try CloudKitSettings.load(environment: environment, readFile: Self.files())
                Issue.record("accepted \(environment.keys.sorted())")
            } catch {
                #expect(error.description.contains(expected), "\(error)")
                #expect(!error.description.contains("junk"))  // The value of a secret is never shown.
            }
        }
    }

    @Test func appsHaveTheirOwnKeys() throws {
        let apps = #"""
            {"apps": [
              {"bundle_id": "com.example.app", "key_id": "ABC123DEFG", "team_id": "DEF123GHIJ", "key_file": "apns.p8",
               "cloudkit": {"key_id": "ck-app", "key_file": "eckey.pem", "container": "iCloud.com.example.app"}},
              {"bundle_id": "com.example.other", "key_id": "ABC123DEFG", "team_id": "DEF123GHIJ", "key_file": "apns.p8"}
            ]}
            """#
        let settings = try CloudKitSettings.load(
            environment: ["HERALD_APPS_FILE": "/keys/apps.json"],
            readFile: Self.files(["/keys/apps.json": apps])
        )
        #expect(settings.appKeys["com.example.app"]?.signer.keyID == "ck-app")
        #expect(settings.appKeys["com.example.app"]?.container == "iCloud.com.example.app")
        #expect(settings.signer(app: "com.example.other") == nil)
        // The APNs loader reads the same file and leaves the cloudkit objects to this one.
        let loaded = try APNSAppConfiguration.load(
            environment: ["HERALD_APPS_FILE": "/keys/apps.json"],
            readFile: Self.files(["/keys/apps.json": apps, "/keys/apns.p8": P256PrivateKey().pemRepresentation])
        )
        #expect(loaded.map(\.bundleID) == ["com.example.app", "com.example.other"])
        let broken = #"{"apps": [{"bundle_id": "a.b", "cloudkit": {"key_id": "k", "kee": 1}}]}"#
        #expect(throws: ConfigurationError.self) {
            try CloudKitSettings.load(
                environment: ["HERALD_APPS_FILE": "/keys/apps.json"],
                readFile: Self.files(["/keys/apps.json": broken])
            )
        }
    }

    @Test func retryabilityFollowsCloudKitsCodes() {
        #expect(CloudKitError(.throttled, reason: "").isRetryable)
        #expect(CloudKitError(.tryAgainLater, reason: "").isRetryable)
        #expect(CloudKitError(.internalError, reason: "", status: 500).isRetryable)
        #expect(CloudKitError(.connectionFailed, reason: "").isRetryable)
        #expect(!CloudKitError(.authenticationFailed, reason: "", status: 401).isRetryable)
        #expect(!CloudKitError(.badRequest, reason: "", status: 400).isRetryable)
        #expect(!CloudKitError(.quotaExceeded, reason: "", status: 413).isRetryable)
    }
}
