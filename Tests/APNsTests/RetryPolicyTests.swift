import APNs
import Testing

@Suite struct RetryPolicyTests {
    private func refusal(_ status: Int, _ reason: APNSErrorReason, retryAfter: Duration? = nil) -> APNSErrorResponse {
        APNSErrorResponse(status: status, reason: reason, retryAfter: retryAfter)
    }

    @Test func retriesTheRetryableStatusesUntilTheLastAttempt() {
        let policy = APNSRetryPolicy.default
        var random = SeededRandom(seed: 1)
        for response in [
            refusal(429, .tooManyRequests), refusal(500, .internalServerError), refusal(503, .serviceUnavailable),
            refusal(503, .shutdown), refusal(503, .unknown), refusal(500, .unknown("Novel")),
        ] {
            guard case .retry(let delay) = policy.decision(after: response, attempt: 1, using: &random) else {
                Issue.record("\(response) should be retried")
                continue
            }
            #expect(delay >= .zero && delay <= .milliseconds(500))
            #expect(policy.decision(after: response, attempt: 2, using: &random) != .giveUp)
            #expect(policy.decision(after: response, attempt: 3, using: &random) == .giveUp)
        }
    }

    @Test func permanentErrorsAreNeverRetried() {
        let policy = APNSRetryPolicy(maxAttempts: 10, retryableStatuses: [400, 403, 410, 413, 429, 500, 503])
        var random = SeededRandom(seed: 2)
        for (raw, category) in ErrorReasonTests.documented where category != .retryable {
            let status = raw == "Unregistered" || raw == "ExpiredToken" ? 410 : 400
            #expect(
                policy.decision(after: refusal(status, APNSErrorReason(rawValue: raw)), attempt: 1, using: &random)
                    == .giveUp,
                "\(raw)"
            )
            // A known permanent reason wins over a retryable status.
            #expect(
                policy.decision(after: refusal(500, APNSErrorReason(rawValue: raw)), attempt: 1, using: &random)
                    == .giveUp,
                "\(raw)"
            )
        }
        #expect(APNSRetryPolicy.default.decision(after: refusal(400, .unknown), attempt: 1, using: &random) == .giveUp)
        #expect(APNSRetryPolicy.default.decision(after: refusal(410, .unknown), attempt: 1, using: &random) == .giveUp)
    }

    @Test func retryAfterIsHonouredWithinTheCap() {
        var random = SeededRandom(seed: 3)
        let policy = APNSRetryPolicy.default
        #expect(
            policy.decision(after: refusal(429, .tooManyRequests, retryAfter: .seconds(2)), attempt: 1, using: &random)
                == .retry(after: .seconds(2))
        )
        #expect(
            policy.decision(after: refusal(429, .tooManyRequests, retryAfter: .seconds(60)), attempt: 1, using: &random)
                == .giveUp
        )
    }

    @Test func ceilingsDoubleUpToTheCap() {
        let policy = APNSRetryPolicy(maxAttempts: 10, initialBackoff: .milliseconds(500), maxBackoff: .seconds(10))
        #expect(
            (1...8).map(policy.ceiling(afterAttempt:)) == [
                .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(10), .seconds(10),
                .seconds(10),
            ]
        )
        #expect(policy.ceiling(afterAttempt: 10_000) == .seconds(10))
    }

    @Test func fullJitterIsSeededAndSpreadOverTheWholeRange() {
        let policy = APNSRetryPolicy(initialBackoff: .seconds(1), maxBackoff: .seconds(1))
        var first = SeededRandom(seed: 42)
        var second = SeededRandom(seed: 42)
        let a = (0..<1000).map { _ in policy.backoff(afterAttempt: 1, using: &first) }
        let b = (0..<1000).map { _ in policy.backoff(afterAttempt: 1, using: &second) }
        #expect(a == b)
        #expect(a.allSatisfy { $0 >= .zero && $0 <= .seconds(1) })
        #expect(a.min()! < .milliseconds(10))
        #expect(a.max()! > .milliseconds(990))
        let mean = a.reduce(Duration.zero, +) / 1000
        #expect(mean > .milliseconds(450) && mean < .milliseconds(550))
        var other = SeededRandom(seed: 43)
        #expect((0..<1000).map { _ in policy.backoff(afterAttempt: 1, using: &other) } != a)
    }

    struct Failure: APNSRetryableError {
        var isSafeToRetry: Bool
    }

    struct Opaque: Error {}

    @Test func transportErrors() {
        var random = SeededRandom(seed: 4)
        let policy = APNSRetryPolicy.default
        #expect(
            policy.decision(afterTransportError: Failure(isSafeToRetry: true), attempt: 1, using: &random) != .giveUp
        )
        #expect(
            policy.decision(afterTransportError: Failure(isSafeToRetry: true), attempt: 3, using: &random) == .giveUp
        )
        #expect(
            policy.decision(afterTransportError: Failure(isSafeToRetry: false), attempt: 1, using: &random) == .giveUp
        )
        #expect(policy.decision(afterTransportError: Opaque(), attempt: 1, using: &random) == .giveUp)
        #expect(policy.decision(afterTransportError: CancellationError(), attempt: 1, using: &random) == .giveUp)
        let permissive = APNSRetryPolicy(isRetryableTransportError: { _ in true })
        #expect(permissive.decision(afterTransportError: Opaque(), attempt: 1, using: &random) != .giveUp)
        #expect(permissive.decision(afterTransportError: CancellationError(), attempt: 1, using: &random) == .giveUp)
    }

    @Test func neverMeansOneAttempt() {
        var random = SeededRandom(seed: 5)
        #expect(APNSRetryPolicy.never.decision(after: refusal(503, .shutdown), attempt: 1, using: &random) == .giveUp)
        #expect(APNSRetryPolicy(maxAttempts: 0).maxAttempts == 1)
    }
}
