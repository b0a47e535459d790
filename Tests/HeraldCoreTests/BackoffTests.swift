import HeraldCore
import Testing

@Suite struct BackoffTests {
    @Test func theCeilingDoublesFromTheInitialWaitUpToTheMaximum() {
        let backoff = Backoff(initial: .milliseconds(500), maximum: .seconds(10), jitter: .full)
        #expect(
            (0...8).map(backoff.ceiling(afterAttempt:)) == [
                .milliseconds(500), .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8),
                .seconds(10), .seconds(10), .seconds(10),
            ]
        )
        #expect(backoff.ceiling(afterAttempt: Int.max) == .seconds(10))
        let zero = Backoff(initial: .zero, maximum: .seconds(1), jitter: .full)
        #expect(zero.ceiling(afterAttempt: 1_000_000) == .zero)
        #expect(zero.delay(afterAttempt: 3) == .zero)
    }

    @Test func noJitterWaitsTheCeiling() {
        let backoff = Backoff(initial: .milliseconds(200), maximum: .seconds(5), jitter: .none)
        var random = SplitMix(seed: 1)
        #expect((1...7).map { backoff.delay(afterAttempt: $0, using: &random) }.last == .seconds(5))
        #expect(backoff.delay(afterAttempt: 3) == .milliseconds(800))
        #expect(backoff.delay(afterAttempt: 3, fraction: 0) == .milliseconds(800))
    }

    @Test func fullJitterDrawsFromZeroToTheCeiling() {
        let backoff = Backoff(initial: .seconds(1), maximum: .seconds(60), jitter: .full)
        var random = SplitMix(seed: 7)
        let draws = (0..<2000).map { _ in backoff.delay(afterAttempt: 3, using: &random) }
        #expect(draws.allSatisfy { $0 >= .zero && $0 <= .seconds(4) })
        #expect(draws.contains { $0 < .seconds(1) })
        #expect(draws.contains { $0 > .seconds(3) })
        #expect(backoff.delay(afterAttempt: 3, fraction: 0) == .zero)
        #expect(backoff.delay(afterAttempt: 3, fraction: 0.5) == .seconds(2))
        #expect(backoff.delay(afterAttempt: 3, fraction: 7) == .seconds(4))
    }

    @Test func equalJitterNeverWaitsLessThanHalfTheCeiling() {
        let backoff = Backoff(initial: .seconds(1), maximum: .seconds(3600), jitter: .equal)
        var random = SplitMix(seed: 3)
        let draws = (0..<2000).map { _ in backoff.delay(afterAttempt: 4, using: &random) }
        #expect(draws.allSatisfy { $0 >= .seconds(4) && $0 <= .seconds(8) })
        #expect(draws.contains { $0 < .seconds(5) })
        #expect(draws.contains { $0 > .seconds(7) })
        #expect(backoff.delay(afterAttempt: 4, fraction: 0) == .seconds(4))
        #expect(backoff.delay(afterAttempt: 4, fraction: 1) == .seconds(8))
        #expect(backoff.delay(afterAttempt: 4, fraction: -1) == .seconds(4))
    }

    @Test func theSameRandomSourceGivesTheSameWaits() {
        let backoff = Backoff(initial: .milliseconds(500), maximum: .seconds(10), jitter: .full)
        var first = SplitMix(seed: 42)
        var second = SplitMix(seed: 42)
        let a = (1...20).map { backoff.delay(afterAttempt: $0, using: &first) }
        let b = (1...20).map { backoff.delay(afterAttempt: $0, using: &second) }
        #expect(a == b)
    }
}

/// A seeded generator, so that draws repeat.
private struct SplitMix: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
