import APNs
import Foundation

/// The time limits on provider tokens (APNS.md §2.1), configurable for tests and experiments.
struct ProviderTokenRules: Sendable {
    /// A token whose `iat` is older than this is `ExpiredProviderToken`. One hour at APNs.
    var lifetime: TimeInterval = 3600
    /// A new token within this long of the previous new token on the same connection is
    /// `TooManyProviderTokenUpdates`. Twenty minutes at APNs.
    var minimumUpdateInterval: TimeInterval = 1200
    /// How far in the future `iat` may be before the token is `InvalidProviderToken` (APNs' own
    /// tolerance is UNCONFIRMED).
    var allowedClockSkew: TimeInterval = 60
}

/// What authenticating one request found.
struct AuthenticationResult: Sendable {
    /// The token's claims when it could be decoded (recorded with the delivery).
    var claims: ProviderTokenClaims?
    /// `nil` when the request is authenticated.
    var rejection: SimulatorRejection?
}

/// One connection's provider-token state, as APNs keeps it (APNS.md §2.1): the team and key the
/// first authenticated request bound it to, the token in use and when it was first presented,
/// and a cache of verified token strings so that each is verified once.
///
/// A value type driven by ``authenticate(authorization:now:rules:verify:)``; the caller holds it
/// in the connection's lock. Checks, in order:
///
/// 1. no `authorization`, or no `bearer <token>` in it → 403 `MissingProviderToken`;
/// 2. the token does not decode, names an unknown key, another team than the key's, or its
///    signature fails → 403 `InvalidProviderToken` (also when `iat` is in the future);
/// 3. `iat` older than ``ProviderTokenRules/lifetime`` → 403 `ExpiredProviderToken`;
/// 4. another team than the connection's → 403 `InvalidProviderToken`; another key →
///    403 `UnrelatedKeyIdInToken` (one team and key per connection);
/// 5. a token that is neither the current nor the previous one, within
///    ``ProviderTokenRules/minimumUpdateInterval`` of the current one's first use →
///    429 `TooManyProviderTokenUpdates` (the token is not adopted).
///
/// The previous token stays acceptable after a refresh: requests signed before it may still be in
/// flight on the connection.
struct ConnectionAuthentication: Sendable {
    private(set) var boundKeyID: String?
    private(set) var boundTeamID: String?
    private(set) var currentToken: String?
    private(set) var currentSince: Date?
    private(set) var previousToken: String?
    private var cache: [String: TokenVerification] = [:]

    /// Verified token strings kept per connection.
    static let cacheLimit = 16

    /// How many distinct tokens were verified (for tests of the cache).
    private(set) var verifications = 0

    init() {}

    mutating func authenticate(
        authorization: String?,
        now: Date,
        rules: ProviderTokenRules,
        verify: (String) -> TokenVerification
    ) -> AuthenticationResult {
        guard let token = Self.bearerToken(authorization) else {
            return AuthenticationResult(claims: nil, rejection: .forbidden(.missingProviderToken))
        }
        let verification: TokenVerification
        if let cached = cache[token] {
            verification = cached
        } else {
            verification = verify(token)
            verifications += 1
            if cache.count >= Self.cacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[token] = verification
        }
        guard let claims = verification.claims, verification.rejection == nil else {
            return AuthenticationResult(
                claims: verification.claims,
                rejection: verification.rejection ?? .forbidden(.invalidProviderToken)
            )
        }
        let age = now.timeIntervalSince1970 - Double(claims.issuedAt)
        if age > rules.lifetime {
            return AuthenticationResult(claims: claims, rejection: .forbidden(.expiredProviderToken))
        }
        if age < -rules.allowedClockSkew {
            return AuthenticationResult(claims: claims, rejection: .forbidden(.invalidProviderToken))
        }
        if let boundTeamID, boundTeamID != claims.teamID {
            return AuthenticationResult(claims: claims, rejection: .forbidden(.invalidProviderToken))
        }
        if let boundKeyID, boundKeyID != claims.keyID {
            return AuthenticationResult(claims: claims, rejection: .forbidden(.unrelatedKeyIdInToken))
        }
        if token != currentToken, token != previousToken {
            if let currentSince, now.timeIntervalSince(currentSince) < rules.minimumUpdateInterval {
                return AuthenticationResult(
                    claims: claims,
                    rejection: SimulatorRejection(status: 429, reason: .tooManyProviderTokenUpdates)
                )
            }
            previousToken = currentToken
            currentToken = token
            currentSince = now
        }
        boundKeyID = claims.keyID
        boundTeamID = claims.teamID
        return AuthenticationResult(claims: claims, rejection: nil)
    }

    /// The token of `bearer <token>` (scheme case-insensitive), or `nil`. Byte-level: this runs
    /// for every request.
    static func bearerToken(_ authorization: String?) -> String? {
        guard let authorization else { return nil }
        let utf8 = authorization.utf8
        guard utf8.count > 7,
            utf8.prefix(6).elementsEqual("bearer".utf8, by: { $0 | 0x20 == $1 }),
            utf8.dropFirst(6).first == UInt8(ascii: " ")
        else { return nil }
        var token = utf8.dropFirst(7)
        while token.first == UInt8(ascii: " ") || token.first == UInt8(ascii: "\t") { token = token.dropFirst() }
        while token.last == UInt8(ascii: " ") || token.last == UInt8(ascii: "\t") { token = token.dropLast() }
        return token.isEmpty ? nil : String(decoding: token, as: UTF8.self)
    }
}
