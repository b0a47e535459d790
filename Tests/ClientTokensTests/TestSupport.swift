import ClientTokens
import Foundation
import HeraldCrypto

/// A fixed moment for the tests: 2026-01-01T00:00:00Z.
let epoch = Date(timeIntervalSince1970: 1_767_225_600)

/// The HS256 secret of the tests (40 bytes).
let secret = Array("test-secret-0123456789abcdef-0123456789".utf8)

/// A verifier holding the test secret and, when given, ES256 keys.
func verifier(
    keys: [String: P256PublicKey] = [:],
    audience: String = "herald",
    secret: [UInt8]? = secret
)
    -> ClientTokenVerifier
{
    ClientTokenVerifier(ClientTokenConfiguration(secret: secret, publicKeys: keys, audience: audience))
}

/// Claims valid at ``epoch`` for an hour.
func claims(subject: String = "u1", app: String? = nil, audiences: [String] = ["herald"]) -> ClientTokenClaims {
    ClientTokenClaims(
        subject: subject,
        app: app,
        audiences: audiences,
        issuedAt: epoch,
        expiresAt: epoch.addingTimeInterval(3_600)
    )
}

/// A JSON payload from a dictionary, as a backend's library would write it.
func payload(_ fields: [String: Any]) throws -> [UInt8] {
    [UInt8](try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]))
}

/// The standard claims at ``epoch`` as a dictionary, for tests that change one.
func standardFields() -> [String: Any] {
    [
        "sub": "u1", "aud": "herald", "iat": Int(epoch.timeIntervalSince1970),
        "exp": Int(epoch.timeIntervalSince1970) + 3_600,
    ]
}
