import APNs
import Foundation

/// The parts of a provider token the simulator checks and records.
struct ProviderTokenClaims: Sendable, Hashable {
    /// `kid`.
    var keyID: String
    /// `iss`.
    var teamID: String
    /// `iat`, seconds since 1970.
    var issuedAt: Int64
}

/// A token's verdict, independent of time: a token string either verifies or it never will. A
/// connection caches these so each distinct token is verified once.
struct TokenVerification: Sendable {
    /// What the token says, when it can be decoded at all (also for a bad signature).
    var claims: ProviderTokenClaims?
    /// `nil` when the signature verified with a configured key of the claimed team.
    var rejection: SimulatorRejection?
}

/// Checks provider tokens against the configured keys: `alg` ES256, a known `kid`, the key's team
/// as `iss`, and the signature (raw or DER), then that a key restricted to one environment is
/// used in the one the simulator plays (403 `BadEnvironmentKeyIdInToken`). Pure apart from the
/// ECDSA arithmetic.
struct ProviderTokenVerifier: Sendable {
    private let keys: [String: APNSSimulatorKey]
    private let teamID: String?
    private let environment: APNSEnvironment?

    init(keys: [APNSSimulatorKey], teamID: String?, environment: APNSEnvironment? = nil) {
        var byID: [String: APNSSimulatorKey] = [:]
        for key in keys { byID[key.keyID] = key }
        self.keys = byID
        self.teamID = teamID
        self.environment = environment
    }

    /// Verifies the compact JWT `token` (without `bearer `).
    func verify(_ token: String) -> TokenVerification {
        guard let decoded = APNSDecodedProviderToken(token) else {
            return TokenVerification(claims: nil, rejection: .forbidden(.invalidProviderToken))
        }
        let claims = ProviderTokenClaims(
            keyID: decoded.keyID,
            teamID: decoded.teamID,
            issuedAt: decoded.issuedAtSeconds
        )
        guard decoded.algorithm == "ES256", let key = keys[decoded.keyID] else {
            return TokenVerification(claims: claims, rejection: .forbidden(.invalidProviderToken))
        }
        if let team = key.teamID ?? teamID, team != decoded.teamID {
            return TokenVerification(claims: claims, rejection: .forbidden(.invalidProviderToken))
        }
        guard decoded.isSignatureValid(for: key.publicKey) else {
            return TokenVerification(claims: claims, rejection: .forbidden(.invalidProviderToken))
        }
        if let restricted = key.environment, let environment, restricted != environment {
            return TokenVerification(claims: claims, rejection: .forbidden(.badEnvironmentKeyIdInToken))
        }
        return TokenVerification(claims: claims, rejection: nil)
    }
}
