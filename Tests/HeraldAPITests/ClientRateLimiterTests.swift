import ClientTokens
import Foundation
import HTTPRouting
import HeraldAPI
import HeraldCore
import Testing

/// `/v1/client`'s rate limits in the admission check, on an injected clock, without sockets.
@Suite struct ClientRateLimiterTests {
    static let secret = Array("limit-test-secret-0123456789abcdef0123456789".utf8)
    static let issued = Date(timeIntervalSince1970: 1_767_225_600)

    static func token(_ user: String, app: String? = nil) throws -> String {
        try ClientTokenSigner.hs256(secret: secret).token(
            for: ClientTokenClaims(
                subject: user,
                app: app,
                issuedAt: issued,
                expiresAt: issued.addingTimeInterval(3_600)
            )
        )
    }

    static func request(_ token: String, from address: String = "203.0.113.7") -> HTTPRequest {
        HTTPRequest(
            method: "GET",
            path: "/v1/client/devices",
            headers: HTTPHeaders([("Authorization", "Bearer \(token)")]),
            remoteAddress: address
        )
    }

    static func authenticator(
        _ limits: ClientRateLimiter.Limits,
        clock: ManualClock,
        metrics: MetricsRegistry
    ) -> ClientTokenAuthenticator {
        ClientTokenAuthenticator(
            ClientTokenConfiguration(secret: secret),
            clock: clock,
            metrics: metrics,
            limiter: ClientRateLimiter(limits, clock: clock, metrics: metrics)
        )
    }

    /// An admission check as a function of a request, which it may change (it sets the claims).
    static func checking(_ check: @escaping Router.AdmissionCheck) -> (HTTPRequest) -> HTTPResponse? {
        { request in
            var request = request
            return check(&request)
        }
    }

    @Test func aUserOverTheirRateGets429WithRetryAfterAndOthersAreUnaffected() throws {
        let clock = ManualClock(Self.issued)
        let metrics = MetricsRegistry()
        let admit = Self.checking(
            Self.authenticator(
                ClientRateLimiter.Limits(user: RateLimit(rate: 1, burst: 2)),
                clock: clock,
                metrics: metrics
            ).admission
        )
        let u1 = try Self.token("u1")
        #expect(admit(Self.request(u1)) == nil)
        #expect(admit(Self.request(u1)) == nil)
        let refused = try #require(admit(Self.request(u1)))
        #expect(refused.status == 429)
        #expect(refused.errorCode == "rate_limited")
        #expect(refused.headers["Retry-After"] == "1")
        #expect(String(decoding: refused.body, as: UTF8.self).contains("HERALD_CLIENT_RATE_LIMIT"))
        // Another user, and the same sub in another app, have buckets of their own.
        #expect(admit(Self.request(try Self.token("u2"))) == nil)
        #expect(admit(Self.request(try Self.token("u1", app: "com.example.other"))) == nil)
        clock.advance(1)
        #expect(admit(Self.request(u1)) == nil)
        #expect(metrics.value("herald_client_rate_limited_total", labels: [("scope", "user")]) == 1)
    }

    @Test func theAddressLimitRefusesBeforeTheTokenIsChecked() throws {
        let clock = ManualClock(Self.issued)
        let metrics = MetricsRegistry()
        let admit = Self.checking(
            Self.authenticator(
                ClientRateLimiter.Limits(address: RateLimit(rate: 1, period: 60, burst: 1)),
                clock: clock,
                metrics: metrics
            ).admission
        )
        #expect(admit(Self.request("not-a-token"))?.status == 401)
        // The bucket is empty: refused on the address, without a look at the token.
        let refused = try #require(admit(Self.request("not-a-token")))
        #expect(refused.status == 429)
        #expect(refused.headers["Retry-After"] == "60")
        #expect(metrics.value("herald_client_token_rejections_total", labels: [("reason", "malformed")]) == 1)
        #expect(admit(Self.request(try Self.token("u1"), from: "198.51.100.1")) == nil, "another address")
        // IPv6 addresses of one /64 share a bucket.
        #expect(admit(Self.request(try Self.token("u1"), from: "2001:db8::1")) == nil)
        #expect(admit(Self.request(try Self.token("u1"), from: "2001:db8::2"))?.status == 429)
        #expect(metrics.value("herald_client_rate_limited_total", labels: [("scope", "ip")]) == 2)
    }

    @Test func aRequestTheServerAdmittedIsNotCountedAgainByTheRouter() async throws {
        let clock = ManualClock(Self.issued)
        let authenticator = Self.authenticator(
            ClientRateLimiter.Limits(user: RateLimit(rate: 1, period: 3_600, burst: 2)),
            clock: clock,
            metrics: MetricsRegistry()
        )
        var router = Router()
        router.admit(under: "/v1/client", authenticator.admission)
        router.get("/v1/client/devices") { _ in HTTPResponse(status: 200) }
        let token = try Self.token("u1")
        for _ in 0..<2 {
            guard case .readBody = router.admit(Self.request(token)) else {
                Issue.record("refused within the burst")
                return
            }
            var admitted = Self.request(token)
            admitted.isAdmitted = true
            #expect(try await router.respond(to: admitted).status == 200)
        }
        #expect(try await router.respond(to: Self.request(token)).status == 429, "two requests, two tokens")
    }

    @Test func limitsAreReadFromTheEnvironmentWithDefaultsAndOff() throws {
        #expect(
            try ClientRateLimiter.Limits.load(environment: [:])
                == ClientRateLimiter.Limits(
                    user: RateLimit(rate: 10, burst: 60),
                    address: RateLimit(rate: 50, burst: 300)
                )
        )
        #expect(
            try ClientRateLimiter.Limits.load(environment: [
                "HERALD_CLIENT_RATE_LIMIT": "off", "HERALD_CLIENT_IP_RATE_LIMIT": "100/m,20",
            ]) == ClientRateLimiter.Limits(user: nil, address: RateLimit(rate: 100, period: 60, burst: 20))
        )
        #expect {
            _ = try ClientRateLimiter.Limits.load(environment: ["HERALD_CLIENT_IP_RATE_LIMIT": "50 per second"])
        } throws: { error in
            "\(error)".contains("HERALD_CLIENT_IP_RATE_LIMIT") && "\(error)".contains("N/s,B")
        }
    }
}
