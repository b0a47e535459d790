import APNs
import APNsTransport
import AsyncTestSupport
import Foundation
import HTTP2
import HeraldCore
import Synchronization
import Testing

/// Retries and provider-token refresh, end to end; waits run on a manual clock.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct RetryEndToEndTests {
    @Test("429 TooManyRequests is retried with backoff, then delivered")
    func tooManyRequests() async throws {
        try await withHarness(retryPolicy: .default) { h in
            h.server.fake.throttle(Fixtures.token, count: 2)
            let request = APNSRequest.alert()
            let result = try await stepping(h.clock, sleeps: 2) { try await h.client.send(request) }
            guard case .delivered(let delivery) = result else {
                Issue.record("expected delivery, got \(result)")
                return
            }
            #expect(delivery.attempts == 3)
            #expect(h.requests(for: request.id).count == 3)
            #expect(h.clock.sleepCount == 2, "each retry waits its backoff")
            let statuses = h.server.answers.filter { $0.apnsID == request.id.uuidString.lowercased() }.map(\.status)
            #expect(statuses == [429, 429, 200])
            #expect(h.metric("herald_apns_requests_total", [("status", "429")]) == 2)
        }
    }

    @Test("503 ServiceUnavailable is retried with backoff on another connection (the refusing one is replaced)")
    func serviceUnavailable() async throws {
        try await withHarness(retryPolicy: .default) { h in
            let refusals = Mutex(0)
            h.server.intercept { received in
                let refuse = refusals.withLock { count -> Bool in
                    count += 1
                    return count <= 2
                }
                return refuse ? .respond(.apnsError(503, "ServiceUnavailable", apnsID: received.apnsID)) : .proceed
            }
            let request = APNSRequest.alert()
            let result = try await stepping(h.clock, sleeps: 2) { try await h.client.send(request) }
            guard case .delivered(let delivery) = result else {
                Issue.record("expected delivery, got \(result)")
                return
            }
            #expect(delivery.attempts == 3)
            #expect(h.clock.sleepCount == 2)
            let attempts = h.requests(for: request.id)
            #expect(attempts.count == 3)
            #expect(Set(attempts.map(\.connectionID)).count == 3, "a retry after 503 reused the refusing connection")
            try await eventually("refusing connections to stay open") { h.pool.status.openConnections == 1 }
            #expect(h.metric("herald_apns_requests_total", [("status", "503")]) == 2)
            #expect(h.metric("herald_apns_connects_total", [("result", "connected")]) == 3)
            #expect(
                h.logs.lines.contains {
                    $0.contains("apns connection closing") && $0.contains("HTTP 503 (ServiceUnavailable)")
                }
            )
        }
    }

    @Test(
        "permanent refusals are never retried",
        arguments: [
            (400, "BadDeviceToken"), (413, "PayloadTooLarge"), (400, "DeviceTokenNotForTopic"), (403, "Forbidden"),
        ]
    )
    func permanentRefusals(status: Int, reason: String) async throws {
        try await withHarness(retryPolicy: .default) { h in
            h.server.intercept { received in .respond(.apnsError(status, reason, apnsID: received.apnsID)) }
            let request = APNSRequest.alert()
            let rejection = try #require(try await h.client.send(request).rejection)
            #expect(rejection.status == status)
            #expect(rejection.reason.rawValue == reason)
            #expect(rejection.attempts == 1)
            #expect(h.requests(for: request.id).count == 1)
            #expect(h.clock.sleepCount == 0)
        }
    }

    @Test("ExpiredProviderToken: exactly one refresh under load, and no new token within 20 minutes")
    func expiredProviderToken() async throws {
        let clock = ManualClock(Date())
        let skew = Mutex<TimeInterval>(0)
        let fake = try TestAPNsServer.makeFake { clock.now().addingTimeInterval(skew.withLock { $0 }) }
        let server = try TestAPNsServer(fake: fake) { clock.now().addingTimeInterval(skew.withLock { $0 }) }
        try await withHarness(server: server, retryPolicy: .default, clock: clock) { h in
            #expect(try await h.client.send(.alert()).isDelivered)
            let first = try await h.tokens.token()
            #expect(h.server.distinctTokens == ["bearer " + first])

            // 25 minutes on, APNs' clock runs 40 minutes ahead: the 25-minute-old token looks 65
            // minutes old. 200 concurrent sends are refused ExpiredProviderToken, and resent with
            // one new token.
            clock.advance(by: .seconds(25 * 60))
            skew.withLock { $0 = 40 * 60 }
            let burst = try await sendAll(h.client, (0..<200).map { .alert(token: deviceToken($0)) })
            #expect(burst.allSatisfy { $0.isDelivered })
            #expect(h.server.distinctTokens.count == 2, "more than one refresh")
            #expect(await h.tokens.tokensGenerated == 2)
            let second = try await h.tokens.token()
            #expect(second != first)
            #expect(h.server.tokenUpdatesRefused == 0)
            let expiredAnswers = h.server.answers.filter { $0.status == 403 }.count
            #expect(expiredAnswers >= 1)

            // APNs calls the new token expired too (its clock jumped): inside the 20-minute floor no
            // new token is made, however many sends are refused.
            clock.advance(by: .seconds(5 * 60))
            skew.withLock { $0 = 3 * 3600 }
            let refused = try await sendAll(h.client, (0..<100).map { .alert(token: deviceToken($0)) })
            #expect(refused.allSatisfy { $0.rejection?.reason == .expiredProviderToken })
            #expect(h.server.distinctTokens.count == 2)

            // The clock is right again; load continues up to 19 minutes after the refresh.
            skew.withLock { $0 = 40 * 60 }
            for _ in 0..<7 {
                clock.advance(by: .seconds(2 * 60))
                let results = try await sendAll(h.client, (0..<50).map { .alert(token: deviceToken($0)) })
                #expect(results.allSatisfy { $0.isDelivered })
            }
            #expect(h.server.distinctTokens.count == 2, "a second refresh within 20 minutes")
            #expect(await h.tokens.tokensGenerated == 2)

            // 20 minutes after the refresh the rejected token is replaced, and APNs takes it on the
            // same connection.
            clock.advance(by: .seconds(60 + 1))
            #expect(try await h.client.send(.alert()).isDelivered)
            #expect(h.server.distinctTokens.count == 3)
            #expect(h.server.tokenUpdatesRefused == 0)
            #expect(h.server.connectionIDs.count == 1)
        }
    }
}
