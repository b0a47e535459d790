import ClientTokens
import Foundation
import HTTPRouting
import HeraldCore
import HeraldCrypto
import HeraldFeature
import Testing

@testable import HeraldAPI

/// `/v1/client`'s authentication: the 401 (or 403) a refused client token gets, and its count.
@Suite struct ClientTokenAuthenticatorTests {
    static let secret = Array("api-test-secret-0123456789abcdef0123456789".utf8)
    static let issued = Date(timeIntervalSince1970: 1_767_225_600)

    static func token(app: String? = nil, lifetime: TimeInterval = 3_600) throws -> String {
        try ClientTokenSigner.hs256(secret: secret).token(
            for: ClientTokenClaims(
                subject: "u1",
                app: app,
                issuedAt: issued,
                expiresAt: issued.addingTimeInterval(lifetime)
            )
        )
    }

    static func request(_ authorization: String?) -> HTTPRequest {
        var headers = HTTPHeaders()
        if let authorization { headers.replaceOrAdd(name: "Authorization", value: authorization) }
        return HTTPRequest(method: "GET", path: "/v1/client/devices", headers: headers)
    }

    @Test func aTokenSeenAgainStillExpiresAndAnotherTokenIsCheckedAfresh() throws {
        let clock = ManualClock(Self.issued)
        let authenticator = ClientTokenAuthenticator(
            ClientTokenConfiguration(secret: Self.secret),
            clock: clock,
            metrics: MetricsRegistry()
        )
        let token = try Self.token(lifetime: 90)
        for _ in 0..<3 { #expect(try authenticator.verify(Self.request("Bearer \(token)")).subject == "u1") }
        // One byte changed: not the token remembered, and its signature no longer holds.
        let forged = String(token.dropLast(2)) + (token.hasSuffix("AA") ? "BB" : "AA")
        #expect(refusal(authenticator, Self.request("Bearer \(forged)")).errorCode == "bad_signature")
        clock.advance(61)
        #expect(try authenticator.verify(Self.request("Bearer \(token)")).subject == "u1", "checked again")
        // Past exp and the clock skew allowed after it (60 s), remembered a moment ago or not.
        clock.advance(90)
        #expect(refusal(authenticator, Self.request("Bearer \(token)")).errorCode == "expired")
    }

    @Test func acceptsAValidTokenAndRefusesEachProblemWithItsReason() throws {
        let metrics = MetricsRegistry()
        let clock = ManualClock(Self.issued)
        let authenticator = ClientTokenAuthenticator(
            ClientTokenConfiguration(secret: Self.secret),
            clock: clock,
            metrics: metrics
        )
        let token = try Self.token()
        #expect(try authenticator.verify(Self.request("Bearer \(token)")).subject == "u1")

        let cases: [(String?, String, String)] = [
            (nil, "missing", "Bearer"),
            ("Basic dTE6cGFzc3dvcmQ=", "missing", "Bearer"),
            // An API key is not a client token.
            ("Bearer k1-0123456789abcdef0123456789abcdef", "malformed", #"Bearer error="invalid_token""#),
            ("Bearer \(token).x", "malformed", #"Bearer error="invalid_token""#),
            ("Bearer \(token.dropLast(2))AA", "bad_signature", #"Bearer error="invalid_token""#),
        ]
        for (authorization, code, challenge) in cases {
            let response = refusal(authenticator, Self.request(authorization))
            #expect(response.status == 401, "\(code)")
            #expect(
                response.errorCode == code,
                "\(authorization ?? "none"): \(String(decoding: response.body, as: UTF8.self))"
            )
            #expect(response.headers["WWW-Authenticate"] == challenge)
            #expect(!String(decoding: response.body, as: UTF8.self).contains(token.prefix(20)), "no token in the body")
        }

        // 59 s after exp it is still valid; at 60 s it has expired (the injected clock).
        clock.set(Self.issued.addingTimeInterval(3_659))
        #expect(try authenticator.verify(Self.request("Bearer \(token)")).subject == "u1")
        clock.set(Self.issued.addingTimeInterval(3_660))
        let expired = refusal(authenticator, Self.request("Bearer \(token)"))
        #expect(expired.status == 401)
        #expect(expired.errorCode == "expired")
        #expect(expired.headers["WWW-Authenticate"] == #"Bearer error="invalid_token""#)

        #expect(metrics.value("herald_client_token_rejections_total", labels: [("reason", "expired")]) == 1)
        #expect(metrics.value("herald_client_token_rejections_total", labels: [("reason", "missing")]) == 2)
        #expect(metrics.value("herald_client_token_rejections_total", labels: [("reason", "bad_signature")]) == 1)
    }

    @Test func withoutKeysEveryRequestIsRefusedSayingClientTokensAreNotConfigured() throws {
        let authenticator = ClientTokenAuthenticator(ClientTokenConfiguration(), metrics: MetricsRegistry())
        let response = refusal(authenticator, Self.request("Bearer \(try Self.token())"))
        #expect(response.status == 401)
        #expect(response.errorCode == "client_tokens_unset")
        #expect(String(decoding: response.body, as: UTF8.self).contains("client tokens are not configured"))
    }

    @Test func aTokenLimitedToAnotherAppIs403() throws {
        let error = ClientTokenError(.wrongApp, "limited to com.example.a").httpError
        #expect(error.status == 403)
        #expect(error.code == "wrong_app")
    }

    /// A route either credential may call: the key is admitted without claims, a user's token with
    /// them; a wrong key is refused as a key and a forged token as a token, each with its reason.
    @Test func eitherAnAPIKeyOrAClientTokenIsAdmittedAndEachRefusedInItsOwnTerms() throws {
        let metrics = MetricsRegistry()
        let key = "either-test-key-0123456789abcdef"
        let either = APIKeyOrClientToken(
            apiKeys: APIKeys([key]),
            clientTokens: ClientTokenAuthenticator(
                ClientTokenConfiguration(secret: Self.secret),
                clock: ManualClock(Self.issued),
                metrics: metrics
            )
        )
        func admit(_ authorization: String?) -> (HTTPResponse?, HTTPRequest) {
            var request = Self.request(authorization)
            return (either.admission(&request), request)
        }
        let byKey = admit("Bearer \(key)")
        #expect(byKey.0 == nil)
        #expect(byKey.1.principal == nil, "the key names no user")
        let token = try Self.token()
        let byToken = admit("Bearer \(token)")
        #expect(byToken.0 == nil)
        #expect((byToken.1.principal as? ClientTokenClaims)?.subject == "u1")

        #expect(admit("Bearer not-the-key-0123456789").0?.errorCode == "invalid_api_key")
        #expect(admit(nil).0?.errorCode == "missing_api_key")
        let forged = String(token.dropLast(2)) + (token.hasSuffix("AA") ? "BB" : "AA")
        #expect(admit("Bearer \(forged)").0?.errorCode == "bad_signature")
        #expect(metrics.value("herald_client_token_rejections_total", labels: [("reason", "bad_signature")]) == 1)
        #expect(APIKeyOrClientToken.isJWTShaped("a.b.c"))
        for text in ["a.b", "a..c", ".b.c", "a.b.", "a.b.c.d", "abc"] {
            #expect(!APIKeyOrClientToken.isJWTShaped(text), "\(text)")
        }
    }

    /// The admission check's answer, which must be a refusal.
    private func refusal(_ authenticator: ClientTokenAuthenticator, _ request: HTTPRequest) -> HTTPResponse {
        var request = request
        guard let response = authenticator.admission(&request) else {
            Issue.record("the request was admitted")
            return HTTPResponse(status: 200)
        }
        return response
    }
}
