public import Foundation
public import HeraldCore
public import HeraldCrypto

/// A provider token taken apart, for checking one as APNs does (the simulator, tests).
///
/// Accepts what APNs accepts: `iat` as a number or a numeric string, and the signature raw
/// (64 bytes) or DER.
public struct APNSDecodedProviderToken: Sendable, Hashable {
    /// The header's `alg`; APNs requires `ES256`.
    public let algorithm: String
    /// The header's `kid`.
    public let keyID: String
    /// The claims' `iss`.
    public let teamID: String
    /// The claims' `iat`.
    public let issuedAt: Date
    /// The claims' `iat` as sent, in whole seconds: any `Int64`, so compare it, never convert it
    /// through `issuedAt` (which cannot round-trip values near `Int64.max`).
    public let issuedAtSeconds: Int64
    /// The decoded header and claims objects, for checks beyond the above.
    public let header: APNSJSONValue
    public let claims: APNSJSONValue
    /// `<header>.<claims>` as sent: the bytes the signature covers.
    public let signingInput: [UInt8]
    /// The decoded signature bytes.
    public let signature: [UInt8]

    /// Splits and decodes `token` (with or without a `bearer ` prefix); `nil` when it is not a
    /// JWS with the fields above.
    public init?(_ token: String) {
        var compact = Substring(token)
        if compact.lowercased().hasPrefix("bearer ") { compact = compact.dropFirst(7) }
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = Base64URL.decode(String(parts[0])),
            let claimsBytes = Base64URL.decode(String(parts[1])),
            let signature = Base64URL.decode(String(parts[2])),
            let header = try? APNSJSONValue(parsing: headerBytes),
            let claims = try? APNSJSONValue(parsing: claimsBytes),
            let algorithm = header["alg"]?.stringValue,
            let keyID = header["kid"]?.stringValue,
            let teamID = claims["iss"]?.stringValue
        else { return nil }
        let seconds: Int64
        switch claims["iat"] {
        case .integer(let value): seconds = value
        case .string(let text):
            guard let value = Int64(text) else { return nil }
            seconds = value
        default: return nil
        }
        self.algorithm = algorithm
        self.keyID = keyID
        self.teamID = teamID
        self.issuedAt = Date(timeIntervalSince1970: TimeInterval(seconds))
        self.issuedAtSeconds = seconds
        self.header = header
        self.claims = claims
        self.signingInput = Array(compact[..<parts[1].endIndex].utf8)
        self.signature = signature
    }

    /// Whether the signature verifies with `publicKey` (raw `R||S` or DER).
    public func isSignatureValid(for publicKey: P256PublicKey) -> Bool {
        let parsed: ECDSASignature?
        if signature.count == 64 {
            parsed = try? ECDSASignature(rawRepresentation: signature)
        } else {
            parsed = try? ECDSASignature(derRepresentation: signature)
        }
        guard let parsed else { return false }
        return publicKey.isValidSignature(parsed, for: signingInput)
    }
}
