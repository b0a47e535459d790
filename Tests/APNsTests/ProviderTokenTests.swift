import APNs
import Foundation
import HeraldCore
import HeraldCrypto
import Testing

@Suite struct ProviderTokenTests {
    @Test func exactHeaderClaimsAndRawSignature() throws {
        let key = try Fixtures.signingKey()
        let token = try APNSProviderToken(signingKey: key, issuedAt: Date(timeIntervalSince1970: 1_700_000_000.9))
        let parts = token.value.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        #expect(parts.count == 3)
        #expect(parts[0] == "eyJhbGciOiJFUzI1NiIsImtpZCI6IkFCQzEyM0RFRkcifQ")
        #expect(
            Base64URL.decode(parts[0]).map { String(decoding: $0, as: UTF8.self) }
                == #"{"alg":"ES256","kid":"ABC123DEFG"}"#
        )
        #expect(
            Base64URL.decode(parts[1]).map { String(decoding: $0, as: UTF8.self) }
                == #"{"iss":"DEF123GHIJ","iat":1700000000}"#
        )
        #expect(parts[2].count == 86)
        #expect(!token.value.contains("="))
        #expect(token.issuedAt == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(token.authorizationHeaderValue == "bearer " + token.value)

        // Verify with the public key as openssl derived it, independently of the private key object.
        let publicKey = try P256PublicKey(pemRepresentation: Fixtures.p8PublicKey)
        let signature = try ECDSASignature(rawRepresentation: try #require(Base64URL.decode(parts[2])))
        #expect(publicKey.isValidSignature(signature, for: Array((parts[0] + "." + parts[1]).utf8)))
    }

    @Test func decodesWhatItSigns() throws {
        let key = try Fixtures.signingKey()
        let token = try APNSProviderToken(signingKey: key, issuedAt: Date(timeIntervalSince1970: 1_700_000_000))
        let decoded = try #require(APNSDecodedProviderToken("bearer " + token.value))
        #expect(decoded.algorithm == "ES256")
        #expect(decoded.keyID == Fixtures.keyID)
        #expect(decoded.teamID == Fixtures.teamID)
        #expect(decoded.issuedAt == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(decoded.header == ["alg": "ES256", "kid": "ABC123DEFG"])
        #expect(decoded.claims == ["iss": "DEF123GHIJ", "iat": 1_700_000_000])
        #expect(decoded.isSignatureValid(for: key.privateKey.publicKey))
        #expect(!decoded.isSignatureValid(for: P256PrivateKey().publicKey))
    }

    @Test func acceptsDERSignaturesAndStringIAT() throws {
        let key = try Fixtures.signingKey()
        let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"ABC123DEFG"}"#.utf8))
        let claims = Base64URL.encode(Array(#"{"iss":"DEF123GHIJ","iat":"1459143580"}"#.utf8))
        let input = header + "." + claims
        let der = try key.privateKey.signature(for: Array(input.utf8)).derRepresentation
        let decoded = try #require(APNSDecodedProviderToken(input + "." + Base64URL.encode(der)))
        #expect(decoded.issuedAt == Date(timeIntervalSince1970: 1_459_143_580))
        #expect(decoded.isSignatureValid(for: key.privateKey.publicKey))
    }

    @Test func tamperedOrMalformedTokens() throws {
        let key = try Fixtures.signingKey()
        let token = try APNSProviderToken(signingKey: key, issuedAt: Date(timeIntervalSince1970: 1_700_000_000))
        let parts = token.value.split(separator: ".").map(String.init)
        let otherClaims = Base64URL.encode(Array(#"{"iss":"DEF123GHIJ","iat":1700009999}"#.utf8))
        let tampered = try #require(APNSDecodedProviderToken(parts[0] + "." + otherClaims + "." + parts[2]))
        #expect(!tampered.isSignatureValid(for: key.privateKey.publicKey))
        for bad in ["", "a.b", "a.b.c.d", "!!.!!.!!", parts[0] + ".e30." + parts[2]] {
            #expect(APNSDecodedProviderToken(bad) == nil, "\(bad)")
        }
    }

    @Test func descriptionsHideSecrets() throws {
        let key = try Fixtures.signingKey()
        let token = try APNSProviderToken(signingKey: key, issuedAt: Date(timeIntervalSince1970: 1_700_000_000))
        #expect(token.description == "APNSProviderToken(kid: ABC123DEFG, iss: DEF123GHIJ, iat: 1700000000)")
        var dumped = ""
        dump(token, to: &dumped)
        dump(key, to: &dumped)
        dump(APNSCredentials.token(key), to: &dumped)
        dump(APNSCredentials.certificate(certificatePEM: "CERTSECRET", keyPEM: "KEYSECRET"), to: &dumped)
        #expect(!dumped.contains(token.value))
        #expect(!dumped.contains(String(token.value.suffix(20))))
        #expect(!dumped.contains("SECRET"))
        #expect(!dumped.contains("MIGHAgEAMBMGByqGSM49"))
        #expect("\(key)" == "APNSSigningKey(keyID: ABC123DEFG, teamID: DEF123GHIJ)")
    }

    @Test func signingKeyChecksIDsAndKey() throws {
        #expect(throws: APNSCredentialError.self) {
            try APNSSigningKey(keyID: "abc123defg", teamID: Fixtures.teamID, pemRepresentation: Fixtures.p8)
        }
        #expect(throws: APNSCredentialError.self) {
            try APNSSigningKey(keyID: Fixtures.keyID, teamID: "SHORT", pemRepresentation: Fixtures.p8)
        }
        do {
            _ = try APNSSigningKey(
                keyID: Fixtures.keyID,
                teamID: Fixtures.teamID,
                pemRepresentation: "-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----"
            )
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .invalidKey)
            #expect(!error.message.contains("c2VjcmV0"))
        }
        do {
            _ = try APNSSigningKey(keyID: Fixtures.keyID, teamID: Fixtures.teamID, pemFile: "/nonexistent/AuthKey.p8")
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .unreadableFile)
        }
    }

    @Test func readsTheKeyFromAFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("AuthKey_\(UUID().uuidString).p8").path
        try Fixtures.p8.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let key = try APNSSigningKey(keyID: Fixtures.keyID, teamID: Fixtures.teamID, pemFile: path)
        #expect(key.privateKey.publicKey == (try P256PublicKey(pemRepresentation: Fixtures.p8PublicKey)))
    }
}

@Suite struct TokenManagerTests {
    private func manager(_ clock: ManualClock) throws -> APNSTokenManager {
        APNSTokenManager(signingKey: try Fixtures.signingKey(), clock: clock)
    }

    @Test func sameTokenFor49MinutesNewAt50() async throws {
        let clock = ManualClock()
        let start = clock.now()
        let manager = try manager(clock)
        let first = try await manager.token()
        clock.advance(by: .seconds(49 * 60 + 59))
        #expect(try await manager.token() == first)
        clock.advance(by: .seconds(1))
        let second = try await manager.token()
        #expect(second != first)
        #expect(await manager.tokensGenerated == 2)
        let decoded = try #require(APNSDecodedProviderToken(second))
        #expect(decoded.issuedAt == start.addingTimeInterval(50 * 60))
    }

    @Test func cachedAuthorizationFollowsTheManagerClockAndRejection() async throws {
        let clock = ManualClock()
        let manager = try manager(clock)
        #expect(manager.cachedAuthorization() == nil)
        let first = try await manager.token()
        let cached = try #require(manager.cachedAuthorization())
        #expect(cached.token == first)
        #expect(cached.headerValue == "bearer " + first)
        #expect(manager.cachedToken() == first)
        #expect(!"\(cached)".contains(first))
        clock.advance(by: .seconds(49 * 60 + 59))
        #expect(manager.cachedAuthorization()?.token == first)
        clock.advance(by: .seconds(1))
        #expect(manager.cachedAuthorization() == nil)
        let second = try await manager.token()
        #expect(manager.cachedToken() == second)
        clock.advance(by: .seconds(25 * 60))
        await manager.invalidate(ifCurrent: second)
        #expect(manager.cachedAuthorization() == nil)
    }

    @Test func aThousandConcurrentCallersCauseOneSignature() async throws {
        let clock = ManualClock()
        let manager = try manager(clock)
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<1000 {
                group.addTask { try await manager.token() }
            }
            var tokens = Set<String>()
            for try await token in group { tokens.insert(token) }
            return tokens
        }
        #expect(tokens.count == 1)
        #expect(await manager.tokensGenerated == 1)
    }

    @Test func invalidatingTwiceWithTheSameTokenRefreshesOnce() async throws {
        let clock = ManualClock()
        let manager = try manager(clock)
        let first = try await manager.token()
        clock.advance(by: .seconds(25 * 60))
        await manager.invalidate(ifCurrent: first)
        await manager.invalidate(ifCurrent: first)
        let second = try await manager.token()
        #expect(second != first)
        await manager.invalidate(ifCurrent: first)
        #expect(try await manager.token() == second)
        #expect(await manager.tokensGenerated == 2)
        #expect(await !manager.isCurrentTokenRejected)
    }

    @Test func insideTheFloorTheRejectedTokenStaysUntil20Minutes() async throws {
        let clock = ManualClock()
        let manager = try manager(clock)
        let first = try await manager.token()
        clock.advance(by: .seconds(5 * 60))
        await manager.invalidate(ifCurrent: first)
        for _ in 0..<10 {
            await manager.invalidate(ifCurrent: first)
            #expect(try await manager.token() == first)
        }
        #expect(await manager.isCurrentTokenRejected)
        clock.advance(by: .seconds(15 * 60 - 1))
        #expect(try await manager.token() == first)
        clock.advance(by: .seconds(1))
        let second = try await manager.token()
        #expect(second != first)
        #expect(await manager.tokensGenerated == 2)
    }

    @Test func neverMoreThanOnceIn20MinutesUnderRepeatedRejection() async throws {
        let clock = ManualClock()
        let manager = try manager(clock)
        var signatures: [Duration] = []
        var last = ""
        for _ in 0..<(3 * 60) {
            let token = try await manager.token()
            if token != last { signatures.append(clock.uptime()) }
            last = token
            await manager.invalidate(ifCurrent: token)
            clock.advance(by: .seconds(60))
        }
        #expect(signatures.count == 9)
        for (earlier, later) in zip(signatures, signatures.dropFirst()) {
            #expect(later - earlier >= .seconds(20 * 60))
        }
    }

    @Test func aWallClockJumpRefreshesAfterTheFloor() async throws {
        let clock = ManualClock()
        let manager = try manager(clock)
        let first = try await manager.token()
        // The wall clock jumps 45 minutes ahead, then both run 10 minutes: the token's `iat` is 55
        // minutes old, but it was signed 10 minutes ago.
        clock.jump(to: clock.now().addingTimeInterval(45 * 60))
        clock.advance(by: .seconds(10 * 60))
        #expect(try await manager.token() == first, "inside the floor")
        clock.advance(by: .seconds(10 * 60))
        #expect(try await manager.token() != first)
    }

    @Test func intervalsAreClampedToApplesLimits() throws {
        let manager = APNSTokenManager(
            signingKey: try Fixtures.signingKey(),
            clock: ManualClock(),
            refreshInterval: .seconds(5),
            minimumRefreshInterval: .seconds(1)
        )
        #expect(manager.refreshInterval == .seconds(20 * 60))
        #expect(manager.minimumRefreshInterval == .seconds(20 * 60))
        let lazy = APNSTokenManager(
            signingKey: try Fixtures.signingKey(),
            clock: ManualClock(),
            refreshInterval: .seconds(7200)
        )
        #expect(lazy.refreshInterval == .seconds(60 * 60))
    }
}
