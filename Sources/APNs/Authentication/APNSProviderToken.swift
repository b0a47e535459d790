public import Foundation
import HeraldCore
import HeraldCrypto

/// A provider authentication token: the ES256 JWT sent as `authorization: bearer <token>`
/// (APNS.md §2.1).
///
/// Header `{"alg":"ES256","kid":"<key ID>"}`, claims `{"iss":"<team ID>","iat":<seconds>}`, each
/// base64url without padding, and the signature as raw `R||S` (64 bytes, 86 characters) as
/// RFC 7518 specifies. ``description`` leaves the token out.
public struct APNSProviderToken: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// The compact JWT.
    public let value: String
    public let keyID: String
    public let teamID: String
    /// The `iat` claim, in whole seconds.
    public let issuedAt: Date

    /// Signs a new token.
    ///
    /// - Parameters:
    ///   - signingKey: the `.p8` key and its ids.
    ///   - issuedAt: the wall-clock time to put in `iat` (rounded down to seconds).
    /// - Throws: ``APNSCredentialError`` when signing fails.
    public init(signingKey: APNSSigningKey, issuedAt: Date) throws(APNSCredentialError) {
        let seconds = APNSExpiration.epochSeconds(issuedAt)
        let header = #"{"alg":"ES256","kid":"# + JSONText.quote(signingKey.keyID) + "}"
        let claims = #"{"iss":"# + JSONText.quote(signingKey.teamID) + #","iat":"# + String(seconds) + "}"
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let signature: ECDSASignature
        do {
            signature = try signingKey.privateKey.signature(for: Array(signingInput.utf8))
        } catch {
            throw APNSCredentialError(code: .signingFailed, message: "signing the provider token failed: \(error)")
        }
        self.value = signingInput + "." + Base64URL.encode(signature.rawRepresentation)
        self.keyID = signingKey.keyID
        self.teamID = signingKey.teamID
        self.issuedAt = Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// `bearer <token>`, the `authorization` header value.
    public var authorizationHeaderValue: String { "bearer " + value }

    public var description: String {
        "APNSProviderToken(kid: \(keyID), iss: \(teamID), iat: \(APNSExpiration.epochSeconds(issuedAt)))"
    }

    public var customMirror: Mirror {
        Mirror(self, children: ["keyID": keyID, "teamID": teamID, "issuedAt": issuedAt, "value": "<redacted>"])
    }
}
