import APNs
import Foundation
import HeraldCrypto
import Testing

@testable import APNsSimulator

/// ``ConnectionAuthentication`` and ``ProviderTokenVerifier``: APNS.md §2.1, with dates given.
@Suite struct ProviderTokenRuleTests {
    let key: APNSSigningKey
    let relatedKey: APNSSigningKey
    let otherTeamKey: APNSSigningKey
    let verifier: ProviderTokenVerifier
    let start = Date(timeIntervalSince1970: 1_800_000_000)
    let rules = ProviderTokenRules()

    init() throws {
        key = try APNSSigningKey(keyID: "KEYAAAAAA1", teamID: "TEAMAAAAA1", privateKey: P256PrivateKey())
        relatedKey = try APNSSigningKey(keyID: "KEYBBBBBB2", teamID: "TEAMAAAAA1", privateKey: P256PrivateKey())
        otherTeamKey = try APNSSigningKey(keyID: "KEYCCCCCC3", teamID: "TEAMCCCCC3", privateKey: P256PrivateKey())
        verifier = ProviderTokenVerifier(
            keys: [key, relatedKey, otherTeamKey].map {
                APNSSimulatorKey(keyID: $0.keyID, teamID: $0.teamID, publicKey: $0.privateKey.publicKey)
            },
            teamID: nil
        )
    }

    func bearer(_ key: APNSSigningKey, at date: Date) throws -> String {
        try APNSProviderToken(signingKey: key, issuedAt: date).authorizationHeaderValue
    }

    func check(
        _ state: inout ConnectionAuthentication,
        _ authorization: String?,
        at now: Date
    ) -> SimulatorRejection? {
        state.authenticate(authorization: authorization, now: now, rules: rules, verify: verifier.verify).rejection
    }

    @Test func missingAndMalformedTokens() throws {
        var state = ConnectionAuthentication()
        #expect(check(&state, nil, at: start)?.reason == .missingProviderToken)
        #expect(check(&state, "bearer ", at: start)?.reason == .missingProviderToken)
        #expect(check(&state, "Basic abc", at: start)?.reason == .missingProviderToken)
        #expect(check(&state, "bearer abc.def.ghi", at: start)?.reason == .invalidProviderToken)
        #expect(check(&state, "bearer not-a-jwt", at: start)?.status == 403)
    }

    @Test func signatureKeyAndTeamMustMatch() throws {
        var state = ConnectionAuthentication()
        let unknown = try APNSSigningKey(keyID: "UNKNOWN001", teamID: "TEAMAAAAA1", privateKey: P256PrivateKey())
        #expect(check(&state, try bearer(unknown, at: start), at: start)?.reason == .invalidProviderToken)
        // Right key id, wrong private key: the signature fails.
        let impostor = try APNSSigningKey(keyID: key.keyID, teamID: key.teamID, privateKey: P256PrivateKey())
        #expect(check(&state, try bearer(impostor, at: start), at: start)?.reason == .invalidProviderToken)
        // Right key, wrong team in iss.
        let wrongTeam = try APNSSigningKey(keyID: key.keyID, teamID: "TEAMZZZZZ9", privateKey: key.privateKey)
        #expect(check(&state, try bearer(wrongTeam, at: start), at: start)?.reason == .invalidProviderToken)
        #expect(check(&state, try bearer(key, at: start), at: start) == nil)
    }

    @Test func derSignaturesAreAccepted() throws {
        let token = try APNSProviderToken(signingKey: key, issuedAt: start).value
        let parts = token.split(separator: ".")
        let signingInput = Array("\(parts[0]).\(parts[1])".utf8)
        let der = try key.privateKey.signature(for: signingInput).derRepresentation
        let derToken = "\(parts[0]).\(parts[1]).\(Base64URL.encode(der))"
        var state = ConnectionAuthentication()
        #expect(check(&state, "bearer \(derToken)", at: start) == nil)
    }

    @Test func expiredAfterAnHourAndInvalidFromTheFuture() throws {
        var state = ConnectionAuthentication()
        let authorization = try bearer(key, at: start)
        #expect(check(&state, authorization, at: start.addingTimeInterval(3600)) == nil)
        #expect(check(&state, authorization, at: start.addingTimeInterval(3601))?.reason == .expiredProviderToken)
        var fresh = ConnectionAuthentication()
        #expect(check(&fresh, authorization, at: start.addingTimeInterval(-61))?.reason == .invalidProviderToken)
        #expect(check(&fresh, authorization, at: start.addingTimeInterval(-59)) == nil)
    }

    @Test func oneKeyAndOneTeamPerConnection() throws {
        var state = ConnectionAuthentication()
        #expect(check(&state, try bearer(key, at: start), at: start) == nil)
        let later = start.addingTimeInterval(1500)
        #expect(check(&state, try bearer(relatedKey, at: later), at: later)?.reason == .unrelatedKeyIdInToken)
        #expect(check(&state, try bearer(otherTeamKey, at: later), at: later)?.reason == .invalidProviderToken)
        // A refused token does not rebind the connection.
        #expect(state.boundKeyID == key.keyID)
        #expect(check(&state, try bearer(key, at: later), at: later) == nil)
    }

    @Test func aNewTokenWithinTwentyMinutesIsTooManyUpdates() throws {
        var state = ConnectionAuthentication()
        let first = try bearer(key, at: start)
        #expect(check(&state, first, at: start) == nil)
        let second = try bearer(key, at: start.addingTimeInterval(60))
        let refused = check(&state, second, at: start.addingTimeInterval(60))
        #expect(refused?.status == 429)
        #expect(refused?.reason == .tooManyProviderTokenUpdates)
        // The first token still works; the refused one was not adopted.
        #expect(check(&state, first, at: start.addingTimeInterval(1199)) == nil)
        #expect(check(&state, second, at: start.addingTimeInterval(1199))?.reason == .tooManyProviderTokenUpdates)
        // Twenty minutes after the first token's first use, a new one is adopted …
        #expect(check(&state, second, at: start.addingTimeInterval(1200)) == nil)
        // … and the previous one keeps working for requests still in flight.
        #expect(check(&state, first, at: start.addingTimeInterval(1201)) == nil)
        // A third token within twenty minutes of the second is refused again.
        let third = try bearer(key, at: start.addingTimeInterval(1300))
        #expect(check(&state, third, at: start.addingTimeInterval(1300))?.reason == .tooManyProviderTokenUpdates)
    }

    @Test func eachTokenIsVerifiedOncePerConnection() throws {
        var state = ConnectionAuthentication()
        let authorization = try bearer(key, at: start)
        for second in 0..<50 {
            #expect(check(&state, authorization, at: start.addingTimeInterval(Double(second))) == nil)
        }
        #expect(check(&state, "bearer garbage", at: start) != nil)
        #expect(check(&state, "bearer garbage", at: start) != nil)
        #expect(state.verifications == 2)
    }

    @Test func aKeyWithoutTeamUsesTheSimulatorsTeam() throws {
        let verifier = ProviderTokenVerifier(
            keys: [APNSSimulatorKey(keyID: key.keyID, publicKey: key.privateKey.publicKey)],
            teamID: "TEAMAAAAA1"
        )
        let good = try APNSProviderToken(signingKey: key, issuedAt: start).value
        #expect(verifier.verify(good).rejection == nil)
        #expect(verifier.verify(good).claims?.teamID == "TEAMAAAAA1")
        let otherTeam = try APNSSigningKey(keyID: key.keyID, teamID: "TEAMZZZZZ9", privateKey: key.privateKey)
        #expect(verifier.verify(try APNSProviderToken(signingKey: otherTeam, issuedAt: start).value).rejection != nil)
    }

    @Test("a key restricted to one environment: BadEnvironmentKeyIdInToken in the other, fine in its own")
    func environmentRestrictedKeys() throws {
        let sandboxOnly = try APNSSigningKey(keyID: "KEYSANDBX1", teamID: "TEAMAAAAA1", privateKey: P256PrivateKey())
        let productionOnly = try APNSSigningKey(keyID: "KEYPRODUC1", teamID: "TEAMAAAAA1", privateKey: P256PrivateKey())
        let keys = [
            APNSSimulatorKey(
                keyID: sandboxOnly.keyID,
                publicKey: sandboxOnly.privateKey.publicKey,
                environment: .sandbox
            ),
            APNSSimulatorKey(
                keyID: productionOnly.keyID,
                publicKey: productionOnly.privateKey.publicKey,
                environment: .production
            ),
            APNSSimulatorKey(keyID: key.keyID, publicKey: key.privateKey.publicKey),
        ]
        func token(_ key: APNSSigningKey) throws -> String {
            try APNSProviderToken(signingKey: key, issuedAt: start).value
        }

        let production = ProviderTokenVerifier(keys: keys, teamID: "TEAMAAAAA1", environment: .production)
        let refused = production.verify(try token(sandboxOnly))
        #expect(refused.rejection?.status == 403)
        #expect(refused.rejection?.reason == .badEnvironmentKeyIdInToken)
        #expect(refused.claims?.keyID == sandboxOnly.keyID)
        #expect(production.verify(try token(productionOnly)).rejection == nil)
        #expect(production.verify(try token(key)).rejection == nil)

        let sandbox = ProviderTokenVerifier(keys: keys, teamID: "TEAMAAAAA1", environment: .sandbox)
        #expect(sandbox.verify(try token(productionOnly)).rejection?.reason == .badEnvironmentKeyIdInToken)
        #expect(sandbox.verify(try token(sandboxOnly)).rejection == nil)

        // A simulator that plays no particular environment accepts restricted keys.
        let either = ProviderTokenVerifier(keys: keys, teamID: "TEAMAAAAA1")
        #expect(either.verify(try token(sandboxOnly)).rejection == nil)
        #expect(either.verify(try token(productionOnly)).rejection == nil)
    }

    /// A token signed by `key` (or with a zeroed signature) whose claims are `claims` verbatim.
    func token(claims: String, signed: Bool) throws -> String {
        let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"\#(key.keyID)"}"#.utf8))
        let body = Base64URL.encode(Array(claims.utf8))
        let signature =
            signed
            ? try key.privateKey.signature(for: Array("\(header).\(body)".utf8)).rawRepresentation
            : [UInt8](repeating: 0, count: 64)
        return "bearer \(header).\(body).\(Base64URL.encode(signature))"
    }

    @Test(
        "an iat at the ends of Int64, signed or not, is refused without trapping",
        arguments: ["9223372036854775807", "-9223372036854775", "\"9223372036854775807\""]
    )
    func extremeIssuedAtIsRefused(iat: String) throws {
        let claims = #"{"iss":"\#(key.teamID)","iat":\#(iat)}"#
        for signed in [false, true] {
            var state = ConnectionAuthentication()
            let verification = verifier.verify(String(try token(claims: claims, signed: signed).dropFirst(7)))
            #expect(verification.claims?.issuedAt == (iat.hasPrefix("-") ? -9_223_372_036_854_775 : Int64.max))
            #expect((verification.rejection == nil) == signed)
            let rejection = check(&state, try token(claims: claims, signed: signed), at: start)
            #expect(rejection?.status == 403)
            #expect(
                rejection?.reason == (signed && iat.hasPrefix("-") ? .expiredProviderToken : .invalidProviderToken)
            )
        }
    }
}
