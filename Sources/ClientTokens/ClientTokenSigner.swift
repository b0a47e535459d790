import Foundation
public import HeraldCrypto

/// Mints client tokens the way an app's backend would: for `herald client-token` and for tests.
/// Herald itself only verifies them.
public enum ClientTokenSigner: Sendable {
    /// HS256 under the shared secret (HERALD_CLIENT_TOKEN_SECRET).
    case hs256(secret: [UInt8])
    /// ES256 under a private key whose public half HERALD_CLIENT_TOKEN_KEYS_FILE lists as `keyID`.
    case es256(P256PrivateKey, keyID: String)

    /// The claims as a JWT payload, keys sorted; times in whole seconds.
    private struct Payload: Encodable {
        var sub: String
        var aud: String
        var iat: Int64
        var exp: Int64
        var nbf: Int64?
        var app: String?
    }

    /// A signed token for `claims` (its first audience is written as `aud`).
    public func token(for claims: ClientTokenClaims) throws -> String {
        let payload = Payload(
            sub: claims.subject,
            aud: claims.audiences.first ?? ClientTokenConfiguration.defaultAudience,
            iat: Int64(claims.issuedAt.timeIntervalSince1970.rounded(.down)),
            exp: Int64(claims.expiresAt.timeIntervalSince1970.rounded(.down)),
            nbf: claims.notBefore.map { Int64($0.timeIntervalSince1970.rounded(.down)) },
            app: claims.app
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try token(payload: [UInt8](encoder.encode(payload)))
    }

    /// A signed token over `payload` exactly as given, with this signer's header: tests use it
    /// to sign claims no well-behaved backend would write.
    public func token(payload: [UInt8]) throws -> String {
        try token(header: Array(headerJSON.utf8), payload: payload)
    }

    /// A signed token with `header` and `payload` exactly as given, signed with this signer's key.
    public func token(header: [UInt8], payload: [UInt8]) throws -> String {
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(payload)
        let signature: [UInt8] =
            switch self {
            case .hs256(let secret): HMAC256.authenticationCode(for: Array(signingInput.utf8), key: secret)
            case .es256(let key, _): try key.signature(for: Array(signingInput.utf8)).rawRepresentation
            }
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// `{"alg":"HS256","typ":"JWT"}` or `{"alg":"ES256","kid":…,"typ":"JWT"}`.
    public var headerJSON: String {
        switch self {
        case .hs256:
            return #"{"alg":"HS256","typ":"JWT"}"#
        case .es256(_, let keyID):
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let kid = (try? encoder.encode(keyID)).map { String(decoding: $0, as: UTF8.self) } ?? "\"\""
            return #"{"alg":"ES256","kid":"# + kid + #","typ":"JWT"}"#
        }
    }
}
