import ClientTokens
import Foundation
import HeraldCrypto
import Testing

@Suite struct ClientTokenVerifierTests {
    @Test func acceptsAnHS256TokenAndReturnsItsClaims() throws {
        let token = try ClientTokenSigner.hs256(secret: secret).token(for: claims(app: "com.example.app"))
        let verified = try verifier().verify(token, now: epoch)
        #expect(verified.subject == "u1")
        #expect(verified.app == "com.example.app")
        #expect(verified.audiences == ["herald"])
        #expect(verified.expiresAt == epoch.addingTimeInterval(3_600))
    }

    @Test func acceptsAnES256TokenByItsKid() throws {
        let key = P256PrivateKey()
        let other = P256PrivateKey()
        let token = try ClientTokenSigner.es256(key, keyID: "backend-1").token(for: claims())
        let keys = ["backend-0": other.publicKey, "backend-1": key.publicKey]
        #expect(try verifier(keys: keys, secret: nil).verify(token, now: epoch).subject == "u1")
    }

    /// One token for each reason, and the reason it must be refused with.
    @Test func refusesEachReason() throws {
        let hs = ClientTokenSigner.hs256(secret: secret)
        let key = P256PrivateKey()
        let es = ClientTokenSigner.es256(key, keyID: "k1")
        let keys = ["k1": key.publicKey]
        let now = Int(epoch.timeIntervalSince1970)
        func with(_ changes: [String: Any?]) throws -> String {
            var fields = standardFields()
            for (name, value) in changes { fields[name] = value }
            return try hs.token(payload: payload(fields))
        }
        let valid = try hs.token(for: claims())
        let parts = valid.split(separator: ".").map(String.init)
        let cases: [(String, String, ClientTokenError.Reason, ClientTokenVerifier)] = [
            ("empty", "", .missing, verifier()),
            ("two parts", parts[0] + "." + parts[1], .malformed, verifier()),
            ("padding", valid + "=", .malformed, verifier()),
            ("not base64url", "a+b.cc.dd", .malformed, verifier()),
            ("too long", String(repeating: "a", count: 5_000), .malformed, verifier()),
            (
                "header not JSON", Base64URL.encode(Array("nope".utf8)) + "." + parts[1] + "." + parts[2], .malformed,
                verifier()
            ),
            (
                "alg none", try hs.token(header: Array(#"{"alg":"none"}"#.utf8), payload: payload(standardFields())),
                .unsupportedAlgorithm, verifier()
            ),
            (
                "alg none unsigned", Base64URL.encode(Array(#"{"alg":"none"}"#.utf8)) + "." + parts[1] + ".",
                .unsupportedAlgorithm, verifier()
            ),
            (
                "alg RS256", try hs.token(header: Array(#"{"alg":"RS256"}"#.utf8), payload: payload(standardFields())),
                .unsupportedAlgorithm, verifier()
            ),
            ("HS256 without a secret", valid, .unsupportedAlgorithm, verifier(keys: keys, secret: nil)),
            ("ES256 without keys", try es.token(for: claims()), .unsupportedAlgorithm, verifier()),
            (
                "unknown kid", try ClientTokenSigner.es256(key, keyID: "k2").token(for: claims()), .unknownKey,
                verifier(keys: keys)
            ),
            (
                "no kid", try es.token(header: Array(#"{"alg":"ES256"}"#.utf8), payload: payload(standardFields())),
                .unknownKey, verifier(keys: keys)
            ),
            (
                "other secret",
                try ClientTokenSigner.hs256(secret: Array(repeating: 7, count: 32)).token(for: claims()),
                .badSignature, verifier()
            ),
            (
                "other ES256 key", try ClientTokenSigner.es256(P256PrivateKey(), keyID: "k1").token(for: claims()),
                .badSignature, verifier(keys: keys)
            ),
            (
                "changed payload", parts[0] + "." + Base64URL.encode(try payload(["sub": "u2"])) + "." + parts[2],
                .badSignature, verifier()
            ),
            ("expired", try with(["iat": now - 7_200, "exp": now - 60]), .expired, verifier()),
            ("nbf ahead", try with(["nbf": now + 61]), .notYetValid, verifier()),
            ("iat ahead", try with(["iat": now + 61, "exp": now + 3_600]), .notYetValid, verifier()),
            ("wrong aud", try with(["aud": "other"]), .wrongAudience, verifier()),
            ("wrong aud array", try with(["aud": ["a", "b"]]), .wrongAudience, verifier()),
            ("configured aud", valid, .wrongAudience, verifier(audience: "push.example.com")),
            ("31 days", try with(["exp": now + 31 * 86_400]), .lifetimeTooLong, verifier()),
            ("no sub", try with(["sub": nil]), .missingClaim, verifier()),
            ("no exp", try with(["exp": nil]), .missingClaim, verifier()),
            ("no iat", try with(["iat": nil]), .missingClaim, verifier()),
            ("no aud", try with(["aud": nil]), .missingClaim, verifier()),
            ("sub a number", try with(["sub": 42]), .invalidClaim, verifier()),
            ("sub empty", try with(["sub": ""]), .invalidClaim, verifier()),
            ("sub too long", try with(["sub": String(repeating: "u", count: 256)]), .invalidClaim, verifier()),
            ("exp a string", try with(["exp": "tomorrow"]), .invalidClaim, verifier()),
            ("exp before iat", try with(["exp": now - 1]), .invalidClaim, verifier()),
            ("app with a space", try with(["app": "com example"]), .invalidClaim, verifier()),
            (
                "duplicate sub",
                try hs.token(
                    payload: Array(#"{"sub":"u1","sub":"admin","aud":"herald","iat":\#(now),"exp":\#(now + 60)}"#.utf8)
                ),
                .malformed, verifier()
            ),
            ("payload an array", try hs.token(payload: Array("[1]".utf8)), .malformed, verifier()),
            (
                "crit",
                try hs.token(header: Array(#"{"alg":"HS256","crit":["x"]}"#.utf8), payload: payload(standardFields())),
                .malformed, verifier()
            ),
            ("not configured", valid, .notConfigured, verifier(secret: nil)),
        ]
        for (name, token, reason, verifier) in cases {
            #expect(throws: ClientTokenError.self, "\(name)") { _ = try verifier.verify(token, now: epoch) }
            do {
                _ = try verifier.verify(token, now: epoch)
            } catch {
                #expect(error.reason == reason, "\(name): \(error)")
                #expect(!error.message.contains(token) || token.isEmpty, "\(name): the message holds the token")
            }
        }
    }

    /// `exp`, `nbf` and `iat` each allow 60 s of skew, and not one second more.
    @Test func clockSkewBoundaries() throws {
        let hs = ClientTokenSigner.hs256(secret: secret)
        let now = Int(epoch.timeIntervalSince1970)
        var fields = standardFields()
        fields["iat"] = now - 600
        fields["exp"] = now
        fields["nbf"] = now - 600
        let expiring = try hs.token(payload: payload(fields))
        let check = verifier()
        #expect(try check.verify(expiring, now: epoch.addingTimeInterval(59)).subject == "u1")
        #expect(reason(check, expiring, at: epoch.addingTimeInterval(60)) == .expired)

        fields = standardFields()
        fields["nbf"] = now + 600
        fields["exp"] = now + 3_600
        let early = try hs.token(payload: payload(fields))
        #expect(try check.verify(early, now: epoch.addingTimeInterval(540)).subject == "u1")
        #expect(reason(check, early, at: epoch.addingTimeInterval(539)) == .notYetValid)

        fields = standardFields()
        fields["iat"] = now + 600
        fields["exp"] = now + 3_600
        let issuedAhead = try hs.token(payload: payload(fields))
        #expect(try check.verify(issuedAhead, now: epoch.addingTimeInterval(540)).subject == "u1")
        #expect(reason(check, issuedAhead, at: epoch.addingTimeInterval(539)) == .notYetValid)
    }

    /// 30 days after `iat` is the longest lifetime allowed.
    @Test func lifetimeBoundary() throws {
        let hs = ClientTokenSigner.hs256(secret: secret)
        let now = Int(epoch.timeIntervalSince1970)
        var fields = standardFields()
        fields["exp"] = now + 30 * 86_400
        #expect(try verifier().verify(hs.token(payload: payload(fields)), now: epoch).subject == "u1")
        fields["exp"] = now + 30 * 86_400 + 1
        #expect(reason(verifier(), try hs.token(payload: payload(fields)), at: epoch) == .lifetimeTooLong)
    }

    /// `aud` as an array names this server when one of its entries does (RFC 7519 §4.1.3).
    @Test func audienceArrayAndConfiguredAudience() throws {
        let hs = ClientTokenSigner.hs256(secret: secret)
        var fields = standardFields()
        fields["aud"] = ["other", "push.example.com"]
        let token = try hs.token(payload: payload(fields))
        #expect(try verifier(audience: "push.example.com").verify(token, now: epoch).audiences.count == 2)
        #expect(reason(verifier(), token, at: epoch) == .wrongAudience)
    }

    @Test func appClaimLimitsTheToken() throws {
        let limited = claims(app: "com.example.app")
        #expect(throws: Never.self) { try limited.permits(app: "com.example.app") }
        #expect(throws: ClientTokenError.self) { try limited.permits(app: "com.example.other") }
        #expect(throws: Never.self) { try claims().permits(app: "com.example.other") }
    }

    /// Every truncation and every single-byte change of a valid token is refused without a crash.
    @Test func survivesMangledTokens() throws {
        let key = P256PrivateKey()
        let tokens = [
            try ClientTokenSigner.hs256(secret: secret).token(for: claims()),
            try ClientTokenSigner.es256(key, keyID: "k1").token(for: claims()),
        ]
        let check = verifier(keys: ["k1": key.publicKey])
        let replacements: [UInt8] = [0, 0x2E, 0x3D, 0x41, 0x7B, 0xFF]
        for token in tokens {
            let bytes = Array(token.utf8)
            for end in 0..<bytes.count {
                #expect(reason(check, String(decoding: bytes[..<end], as: UTF8.self), at: epoch) != nil)
            }
            for index in stride(from: 0, to: bytes.count, by: 3) {
                for replacement in replacements where replacement != bytes[index] {
                    var mangled = bytes
                    mangled[index] = replacement
                    #expect(reason(check, String(decoding: mangled, as: UTF8.self), at: epoch) != nil)
                }
            }
        }
    }
}

/// The reason `verifier` refuses `token` at `now`, or `nil` when it accepts it.
func reason(_ verifier: ClientTokenVerifier, _ token: String, at now: Date) -> ClientTokenError.Reason? {
    do {
        _ = try verifier.verify(token, now: now)
        return nil
    } catch {
        return error.reason
    }
}
