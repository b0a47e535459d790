import APNs
import Foundation
import HeraldCore
import HeraldCrypto
import Testing

@Suite(.timeLimit(.minutes(1))) struct ClientTests {
    struct Harness {
        var clock: ManualClock
        /// Where `clock` started.
        var start: Date
        var fake: FakeAPNs
        var tokens: APNSTokenManager
        var client: APNSClient
    }

    /// A client over the fake APNs, both on one manual clock; `skew` moves the fake's wall clock.
    private func harness(retryPolicy: APNSRetryPolicy = .default, skew: TimeInterval = 0) throws -> Harness {
        let clock = ManualClock()
        let start = clock.now()
        let key = try Fixtures.signingKey()
        let fake = FakeAPNs(
            bundleID: Fixtures.bundleID,
            keyID: Fixtures.keyID,
            teamID: Fixtures.teamID,
            publicKey: try P256PublicKey(pemRepresentation: Fixtures.p8PublicKey),
            wallClock: { clock.now().addingTimeInterval(skew) }
        )
        let tokens = APNSTokenManager(signingKey: key, clock: clock)
        let client = APNSClient(
            transport: fake,
            credentials: .token(key),
            tokenProvider: tokens,
            retryPolicy: retryPolicy,
            clock: clock,
            random: SeededRandom(seed: 7)
        )
        return Harness(clock: clock, start: start, fake: fake, tokens: tokens, client: client)
    }

    /// Runs `body`, advancing the clock past each of `sleeps` retry waits.
    private func run<T: Sendable>(
        _ clock: ManualClock,
        sleeps: Int,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let task = Task { try await body() }
        for _ in 0..<sleeps {
            try await clock.advanceToNextDeadline()
        }
        return try await task.value
    }

    @Test func delivers() async throws {
        let h = try harness()
        let request = Fixtures.alertRequest()
        let result = try await h.client.send(request)
        guard case .delivered(let delivery) = result else {
            Issue.record("expected delivery, got \(result)")
            return
        }
        #expect(delivery.apnsID == request.id)
        #expect(delivery.attempts == 1)
        let sent = try #require(h.fake.received.first)
        #expect(sent.path == "/3/device/" + Fixtures.token)
        let authorization = try #require(sent.headers.value(forName: "authorization"))
        let token = try #require(APNSDecodedProviderToken(authorization))
        #expect(token.issuedAt == h.start)
        #expect(token.keyID == Fixtures.keyID)
    }

    @Test func invalidRequestsAreNotSent() async throws {
        let h = try harness()
        var request = Fixtures.alertRequest()
        request.payload = Array("[]".utf8)
        await #expect(throws: APNSValidationError.self) { try await h.client.send(request) }
        #expect(h.fake.received.isEmpty)
        #expect(await h.tokens.tokensGenerated == 0)
    }

    /// A fan-out checks its template's content once; each copy's token is still checked.
    @Test func aCheckedTemplatesCopiesHaveOnlyTheirTokensChecked() async throws {
        let h = try harness()
        var template = Fixtures.alertRequest()
        template.deviceToken = ""
        try template.validateContent()
        var badPayload = template
        badPayload.payload = Array("[]".utf8)
        #expect(throws: APNSValidationError.self) { try badPayload.validateContent() }

        var copy = template
        copy.deviceToken = Fixtures.token
        let result = try await h.client.send(copy, checking: .deviceToken)
        #expect(result.isDelivered)
        copy.deviceToken = "not-a-token"
        await #expect(throws: APNSValidationError.self) { try await h.client.send(copy, checking: .deviceToken) }
        #expect(h.fake.received.count == 1)
    }

    @Test func unregisteredTokenCarriesItsTimestamp() async throws {
        let h = try harness()
        let since = Date(timeIntervalSince1970: 1_699_000_000.5)
        h.fake.unregister(Fixtures.token, at: since)
        let rejection = try #require(try await h.client.send(Fixtures.alertRequest()).rejection)
        #expect(rejection.status == 410)
        #expect(rejection.reason == .unregistered)
        #expect(rejection.isDeviceTokenInvalid)
        #expect(rejection.deviceTokenInvalidSince == since)
        #expect(rejection.attempts == 1)
        #expect(h.fake.received.count == 1)
    }

    @Test func tokenNotForTopicIsDead() async throws {
        let h = try harness()
        var request = Fixtures.alertRequest()
        request.topic = .bundleID("com.example.other")
        let rejection = try #require(try await h.client.send(request).rejection)
        #expect(rejection.reason == .deviceTokenNotForTopic)
        #expect(rejection.isDeviceTokenInvalid)
        #expect(rejection.deviceTokenInvalidSince == nil)
    }

    @Test func throttledTwiceThenDelivered() async throws {
        let h = try harness()
        h.fake.throttle(Fixtures.token, count: 2)
        let client = h.client
        let result = try await run(h.clock, sleeps: 2) { try await client.send(Fixtures.alertRequest()) }
        guard case .delivered(let delivery) = result else {
            Issue.record("expected delivery, got \(result)")
            return
        }
        #expect(delivery.attempts == 3)
        #expect(h.fake.received.count == 3)
        #expect(h.clock.sleepCount == 2)
        #expect(h.clock.uptime() <= .milliseconds(1500))
    }

    @Test func throttledForeverGivesUpAfterThreeAttempts() async throws {
        let h = try harness()
        h.fake.throttle(Fixtures.token, count: 100)
        let client = h.client
        let result = try await run(h.clock, sleeps: 2) { try await client.send(Fixtures.alertRequest()) }
        let rejection = try #require(result.rejection)
        #expect(rejection.reason == .tooManyRequests)
        #expect(rejection.category == .retryable)
        #expect(rejection.attempts == 3)
        #expect(h.fake.received.count == 3)
    }

    @Test func permanentRefusalsAreNotRetried() async throws {
        let h = try harness()
        h.fake.script(.response(APNSHTTPResponse(status: 413, body: Array(#"{"reason":"PayloadTooLarge"}"#.utf8))))
        let rejection = try #require(try await h.client.send(Fixtures.alertRequest()).rejection)
        #expect(rejection.reason == .payloadTooLarge)
        #expect(rejection.category == .invalidRequest)
        #expect(h.fake.received.count == 1)
        #expect(h.clock.sleepCount == 0)
    }

    @Test func expiredProviderTokenIsRefreshedOnceAndResent() async throws {
        let h = try harness()
        _ = try await h.client.send(Fixtures.alertRequest())
        h.clock.advance(by: .seconds(25 * 60))
        h.fake.script(.response(APNSHTTPResponse(status: 403, body: Array(#"{"reason":"ExpiredProviderToken"}"#.utf8))))
        let result = try await h.client.send(Fixtures.alertRequest())
        guard case .delivered(let delivery) = result else {
            Issue.record("expected delivery, got \(result)")
            return
        }
        #expect(delivery.attempts == 2)
        #expect(await h.tokens.tokensGenerated == 2)
        let authorizations = h.fake.received.map { $0.headers.value(forName: "authorization") }
        #expect(authorizations.count == 3)
        #expect(authorizations[0] == authorizations[1])
        #expect(authorizations[1] != authorizations[2])
        #expect(h.clock.sleepCount == 0)
    }

    @Test func expiredProviderTokenInsideTheFloorIsReported() async throws {
        // The fake's clock runs two hours ahead: every token looks expired to it.
        let h = try harness(skew: 2 * 3600)
        for _ in 0..<5 {
            let rejection = try #require(try await h.client.send(Fixtures.alertRequest()).rejection)
            #expect(rejection.reason == .expiredProviderToken)
            #expect(rejection.category == .providerTokenExpired)
            #expect(rejection.attempts == 1)
        }
        #expect(await h.tokens.tokensGenerated == 1)
        #expect(await h.tokens.isCurrentTokenRejected)
        #expect(h.fake.received.count == 5)
    }

    @Test func expiredAgainAfterARefreshIsNotRefreshedTwice() async throws {
        let h = try harness()
        _ = try await h.tokens.token()
        h.clock.advance(by: .seconds(30 * 60))
        let expired = APNSHTTPResponse(status: 403, body: Array(#"{"reason":"ExpiredProviderToken"}"#.utf8))
        h.fake.script(.response(expired), .response(expired), .response(expired))
        let rejection = try #require(try await h.client.send(Fixtures.alertRequest()).rejection)
        #expect(rejection.reason == .expiredProviderToken)
        #expect(rejection.attempts == 2)
        #expect(await h.tokens.tokensGenerated == 2)
    }

    @Test func tokensRefreshOnScheduleAndTheFakeChecksTheirAge() async throws {
        let h = try harness()
        #expect(try await h.client.send(Fixtures.alertRequest()).isDelivered)
        h.clock.advance(by: .seconds(50 * 60))
        #expect(try await h.client.send(Fixtures.alertRequest()).isDelivered)
        h.clock.advance(by: .seconds(50 * 60))
        #expect(try await h.client.send(Fixtures.alertRequest()).isDelivered)
        #expect(await h.tokens.tokensGenerated == 3)
        #expect(Set(h.fake.received.compactMap { $0.headers.value(forName: "authorization") }).count == 3)
    }

    @Test func concurrentSendsShareOneToken() async throws {
        let h = try harness()
        let client = h.client
        let delivered = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<50 {
                group.addTask { try await client.send(Fixtures.alertRequest()).isDelivered }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(delivered == 50)
        #expect(await h.tokens.tokensGenerated == 1)
    }

    @Test func safeTransportErrorsAreRetried() async throws {
        let h = try harness()
        h.fake.script(.error(FakeAPNs.TransportFailure(isSafeToRetry: true)))
        let client = h.client
        let result = try await run(h.clock, sleeps: 1) { try await client.send(Fixtures.alertRequest()) }
        guard case .delivered(let delivery) = result else {
            Issue.record("expected delivery, got \(result)")
            return
        }
        #expect(delivery.attempts == 2)
    }

    @Test func unsafeTransportErrorsAreThrown() async throws {
        let h = try harness()
        h.fake.script(.error(FakeAPNs.TransportFailure(isSafeToRetry: false)))
        await #expect(throws: FakeAPNs.TransportFailure(isSafeToRetry: false)) {
            try await h.client.send(Fixtures.alertRequest())
        }
        #expect(h.fake.received.count == 1)
    }

    @Test func transportErrorsExhaustingTheAttemptsAreThrown() async throws {
        let h = try harness()
        let failure = FakeAPNs.TransportFailure(isSafeToRetry: true)
        h.fake.script(.error(failure), .error(failure), .error(failure))
        let client = h.client
        await #expect(throws: FakeAPNs.TransportFailure.self) {
            try await run(h.clock, sleeps: 2) { try await client.send(Fixtures.alertRequest()) }
        }
        #expect(h.fake.received.count == 3)
    }

    @Test func cancellationDuringBackoffStops() async throws {
        let h = try harness()
        h.fake.throttle(Fixtures.token, count: 100)
        let client = h.client
        let task = Task { try await client.send(Fixtures.alertRequest()) }
        try await h.clock.waitForSleep()
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(h.fake.received.count == 1)
    }

    @Test func certificateCredentialsSendNoAuthorization() async throws {
        let h = try harness()
        let client = APNSClient(
            transport: h.fake,
            credentials: .certificate(certificatePEM: "cert", keyPEM: "key"),
            clock: h.clock
        )
        #expect(client.tokenProvider == nil)
        h.fake.script(.response(APNSHTTPResponse(status: 200)))
        #expect(try await client.send(Fixtures.alertRequest()).isDelivered)
        #expect(h.fake.received.first?.headers.value(forName: "authorization") == nil)
    }

    @Test func theClientMakesItsOwnTokenManagerWhenNoneIsGiven() async throws {
        let h = try harness()
        let client = APNSClient(
            transport: h.fake,
            credentials: .token(try Fixtures.signingKey()),
            clock: h.clock
        )
        #expect(try await client.send(Fixtures.alertRequest()).isDelivered)
    }

    @Test func channelLifecycleAndBroadcast() async throws {
        let h = try harness()
        let requestID = UUID()
        let channel = try await h.client.createChannel(bundleID: Fixtures.bundleID, storagePolicy: .noMessageStored)
        let stored = try await h.client.createChannel(
            bundleID: Fixtures.bundleID,
            storagePolicy: .mostRecentMessageStored
        )
        #expect(
            try await h.client.allChannels(bundleID: Fixtures.bundleID)
                == [channel, stored].sorted { $0.rawValue < $1.rawValue }
        )
        #expect(
            try await h.client.channelConfiguration(bundleID: Fixtures.bundleID, channelID: stored)
                == APNSChannelConfiguration(storagePolicy: .mostRecentMessageStored)
        )

        let broadcast = try APNSBroadcastRequest(
            bundleID: Fixtures.bundleID,
            channelID: channel,
            storagePolicy: .noMessageStored,
            payload: APNSLiveActivityPayload.update(contentState: ["score": "1-0"], timestamp: h.clock.now()),
            requestID: requestID
        )
        guard case .delivered(let delivery) = try await h.client.send(broadcast) else {
            Issue.record("broadcast not delivered")
            return
        }
        #expect(delivery.requestID == requestID)
        #expect(delivery.uniqueID == "unique-1")
        let sent = try #require(h.fake.received.last)
        #expect(sent.path == "/4/broadcasts/apps/com.example.app")

        try await h.client.deleteChannel(bundleID: Fixtures.bundleID, channelID: channel)
        do {
            _ = try await h.client.channelConfiguration(bundleID: Fixtures.bundleID, channelID: channel)
            Issue.record("expected a rejection")
        } catch let rejection as APNSRejection {
            #expect(rejection.reason == .channelNotRegistered)
            #expect(rejection.category == .channelInvalid)
        }
        let gone = try #require(try await h.client.send(broadcast).rejection)
        #expect(gone.reason == .channelNotRegistered)
    }

    @Test func channelCreationIsNotRetriedOn500() async throws {
        let h = try harness()
        h.fake.script(.response(APNSHTTPResponse(status: 500, body: Array(#"{"reason":"InternalServerError"}"#.utf8))))
        await #expect(throws: APNSRejection.self) {
            try await h.client.createChannel(bundleID: Fixtures.bundleID, storagePolicy: .noMessageStored)
        }
        #expect(h.fake.received.count == 1)
        h.fake.script(.response(APNSHTTPResponse(status: 201)))
        await #expect(throws: APNSUnexpectedResponseError.self) {
            try await h.client.createChannel(bundleID: Fixtures.bundleID, storagePolicy: .noMessageStored)
        }
    }

    @Test func theFakeEnforcesTheRulesTheClientChecks() async throws {
        // The client's validation and the fake agree: a request the client would refuse, sent raw,
        // is refused by the fake with Apple's reason.
        let h = try harness()
        let jwt = try await h.tokens.token()
        var request = Fixtures.alertRequest()
        request.collapseID = String(repeating: "c", count: 65)
        #expect(try await h.fake.send(request.httpRequest(authorization: jwt)).status == 400)
        request = Fixtures.alertRequest()
        request.pushType = .background
        request.priority = .immediately
        #expect(
            APNSErrorResponse(try await h.fake.send(request.httpRequest(authorization: jwt))).reason == .badPriority
        )
        request = Fixtures.alertRequest()
        #expect(
            APNSErrorResponse(try await h.fake.send(request.httpRequest(authorization: nil))).reason
                == .missingProviderToken
        )
        let forged = try APNSProviderToken(
            signingKey: try APNSSigningKey(
                keyID: Fixtures.keyID,
                teamID: Fixtures.teamID,
                privateKey: P256PrivateKey()
            ),
            issuedAt: h.clock.now()
        )
        #expect(
            APNSErrorResponse(try await h.fake.send(request.httpRequest(authorization: forged.value))).reason
                == .invalidProviderToken
        )
    }
}
