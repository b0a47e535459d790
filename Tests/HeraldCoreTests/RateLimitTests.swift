import Foundation
import HeraldCore
import Testing

@Suite("Rate limits: the value grammar and the token buckets")
struct RateLimitTests {
    @Test(arguments: [
        ("10/s,60", RateLimit(rate: 10, period: 1, burst: 60)),
        ("50/s,300", RateLimit(rate: 50, period: 1, burst: 300)),
        (" 5/m,10 ", RateLimit(rate: 5, period: 60, burst: 10)),
        ("100/h,1", RateLimit(rate: 100, period: 3_600, burst: 1)),
        ("7/s", RateLimit(rate: 7, period: 1, burst: 7)),
        ("1000000/s,1000000", RateLimit(rate: 1_000_000, period: 1, burst: 1_000_000)),
    ])
    func acceptedValues(_ text: String, _ expected: RateLimit) throws {
        #expect(try RateLimit.parse(text) == expected)
    }

    @Test func offTurnsTheLimitOff() throws {
        #expect(try RateLimit.parse("off") == nil)
        #expect(try RateLimit.parse("  off\t") == nil)
    }

    @Test(arguments: [
        ("", "no /s"),
        ("10", "no /s"),
        ("10/d,5", "unit"),
        ("10/S,5", "unit"),
        ("10/sec,5", "unit"),
        ("0/s,5", "number of requests"),
        ("-1/s,5", "number of requests"),
        ("1.5/s,5", "number of requests"),
        ("10/s,0", "burst"),
        ("10/s,", "burst"),
        ("10/s,5,6", "burst"),
        ("10 /s,5", "number of requests"),
        ("1000001/s,5", "number of requests"),
        ("99999999999999999999/s,5", "number of requests"),
        ("OFF", "no /s"),
        ("/s,5", "number of requests"),
        (String(repeating: "1", count: 70), "longer than 64"),
        ("１０/s,5", "number of requests"),
    ])
    func refusedValuesSayWhatIsWrong(_ text: String, _ problem: String) {
        #expect {
            _ = try RateLimit.parse(text)
        } throws: { error in
            "\(error)".contains(problem)
        }
    }

    @Test func descriptionIsTheWrittenForm() throws {
        for text in ["10/s,60", "5/m,10", "100/h,1"] {
            #expect(try RateLimit.parse(text)?.description == text)
        }
    }

    @Test func settingsReportWhatToWriteAndFallBackToTheDefault() {
        var reader = EnvironmentReader(["HERALD_CLIENT_RATE_LIMIT": "fast"])
        #expect(reader.rateLimit(.clientRateLimit) == RateLimit(rate: 10, burst: 60))
        #expect(reader.problems.count == 1)
        #expect(reader.problems.first?.contains("HERALD_CLIENT_RATE_LIMIT=fast is not valid") == true)
        #expect(reader.problems.first?.contains("N/s,B") == true)
        var unset = EnvironmentReader([:])
        #expect(unset.rateLimit(.clientIPRateLimit) == RateLimit(rate: 50, burst: 300))
        #expect(unset.rateLimit(.relayIPRateLimit) == nil, "the relay's limit is off by default")
        var off = EnvironmentReader(["HERALD_CLIENT_RATE_LIMIT": "off"])
        #expect(off.rateLimit(.clientRateLimit) == nil)
        #expect(off.problems.isEmpty)
    }

    // MARK: Buckets

    /// One step of a table: at `time`, a request of `key`, and what the buckets answer.
    struct Step: Sendable, CustomStringConvertible {
        var time: Double
        var key: String
        var expected: TokenBuckets<String>.Decision
        var description: String { "t=\(time) \(key) → \(expected)" }
    }

    @Test func aBucketTakesItsBurstThenRefillsAtItsRate() {
        // 2 a second, bursts of 3.
        var buckets = TokenBuckets<String>(limit: RateLimit(rate: 2, burst: 3))
        let steps: [Step] = [
            Step(time: 0, key: "a", expected: .allowed),
            Step(time: 0, key: "a", expected: .allowed),
            Step(time: 0, key: "a", expected: .allowed),
            // Empty: half a second to the next token, rounded up to a whole second.
            Step(time: 0, key: "a", expected: .refused(retryAfter: 1)),
            // Another key has its own bucket.
            Step(time: 0, key: "b", expected: .allowed),
            Step(time: 0.5, key: "a", expected: .allowed),
            Step(time: 0.5, key: "a", expected: .refused(retryAfter: 1)),
            // A long quiet time fills the bucket to its burst, no further.
            Step(time: 100, key: "a", expected: .allowed),
            Step(time: 100, key: "a", expected: .allowed),
            Step(time: 100, key: "a", expected: .allowed),
            Step(time: 100, key: "a", expected: .refused(retryAfter: 1)),
            // A clock read out of order takes nothing away.
            Step(time: 99, key: "a", expected: .refused(retryAfter: 1)),
        ]
        for step in steps {
            #expect(buckets.take(step.key, at: step.time) == step.expected, "\(step)")
        }
    }

    @Test func retryAfterIsWholeSecondsRoundedUp() {
        // One a minute: an empty bucket has its next token in 60 s.
        var buckets = TokenBuckets<String>(limit: RateLimit(rate: 1, period: 60, burst: 1))
        #expect(buckets.take("a", at: 0) == .allowed)
        #expect(buckets.take("a", at: 0) == .refused(retryAfter: 60))
        #expect(buckets.take("a", at: 59.2) == .refused(retryAfter: 1))
        #expect(buckets.take("a", at: 30.5) == .refused(retryAfter: 1), "the bucket never goes back in time")
        #expect(buckets.take("a", at: 60) == .allowed)
        // 3 an hour: 1,200 s a token.
        var hourly = TokenBuckets<String>(limit: RateLimit(rate: 3, period: 3_600, burst: 1))
        #expect(hourly.take("a", at: 0) == .allowed)
        #expect(hourly.take("a", at: 0) == .refused(retryAfter: 1_200))
    }

    @Test func theTableIsBoundedFullBucketsAreDroppedAndTheRestShareOneBucket() {
        // 1 a second, bursts of 2: an empty bucket is full again after 2 s.
        var buckets = TokenBuckets<String>(limit: RateLimit(rate: 1, burst: 2), maximumKeys: 3)
        for key in ["a", "b", "c"] { #expect(buckets.take(key, at: 0) == .allowed) }
        #expect(buckets.count == 3)
        // Full table, every bucket still in use: new keys share one overflow bucket.
        #expect(buckets.take("d", at: 0.5) == .allowed)
        #expect(buckets.take("e", at: 0.5) == .allowed)
        #expect(buckets.take("f", at: 0.5) == .refused(retryAfter: 1))
        #expect(buckets.count == 3, "no key beyond the cap is kept")
        // The kept keys keep their own buckets.
        #expect(buckets.take("a", at: 0.5) == .allowed)
        // After the refill time the idle buckets are full, the same as none: a sweep drops them.
        #expect(buckets.take("g", at: 10) == .allowed)
        #expect(buckets.count == 1)
        for key in (0..<1_000).map({ "rotating-\($0)" }) { _ = buckets.take(key, at: 11) }
        #expect(buckets.count <= 3, "an attacker rotating keys cannot grow the table")
    }

    @Test func theLimiterTakesItsTimeFromTheInjectedClock() {
        let clock = ManualClock()
        let limiter = RateLimiter<String>(RateLimit(rate: 1, burst: 1), clock: clock)
        #expect(limiter.take("u") == .allowed)
        #expect(limiter.take("u") == .refused(retryAfter: 1))
        clock.advance(1)
        #expect(limiter.take("u") == .allowed)
    }

    @Test(arguments: [
        ("203.0.113.7", "203.0.113.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"),
        ("::1", "0:0:0:0::/64"),
        ("unknown", "unknown"),
        ("1:2:3", "1:2:3"),
    ])
    func addressesAreCountedByIPv4AddressOrIPv6Slash64(_ address: String, _ key: String) {
        #expect(ClientAddress.rateLimitKey(address) == key)
    }
}
