/// Exponential backoff with optional jitter: the wait before the attempt after attempt *n*
/// (1-based) has the ceiling `min(maximum, initial × 2^(n-1))`, and the jitter draws the wait at
/// or under it, so that many callers failing together do not come back together.
///
/// Each user keeps its own parameters:
///
/// ```swift
/// let backoff = Backoff(initial: .milliseconds(500), maximum: .seconds(10), jitter: .full)
/// try await clock.sleep(for: backoff.delay(afterAttempt: attempt))
/// ```
public struct Backoff: Sendable, Hashable {
    /// How the wait is drawn under the ceiling.
    public enum Jitter: Sendable, Hashable {
        /// Always the ceiling.
        case none
        /// Uniform in `0...ceiling` ("full jitter").
        case full
        /// Uniform in `ceiling/2...ceiling` ("equal jitter"): never less than half.
        case equal
    }

    /// The ceiling after the first attempt.
    public var initial: Duration
    /// The largest ceiling.
    public var maximum: Duration
    public var jitter: Jitter

    public init(initial: Duration, maximum: Duration, jitter: Jitter) {
        self.initial = initial
        self.maximum = maximum
        self.jitter = jitter
    }

    /// The largest wait after attempt `attempt` (1-based; below 1 counts as 1):
    /// `min(maximum, initial × 2^(attempt-1))`, never negative.
    public func ceiling(afterAttempt attempt: Int) -> Duration {
        let cap = Self.nanoseconds(maximum)
        var ceiling = Self.nanoseconds(initial)
        for _ in 1..<max(1, attempt) {
            guard ceiling > 0, ceiling < cap else { break }
            ceiling = ceiling > Int64.max / 2 ? Int64.max : ceiling * 2
        }
        return .nanoseconds(max(0, min(ceiling, cap)))
    }

    /// The wait after attempt `attempt` (1-based), drawn from `random`, in whole nanoseconds.
    public func delay(afterAttempt attempt: Int, using random: inout some RandomNumberGenerator) -> Duration {
        let ceiling = Self.nanoseconds(ceiling(afterAttempt: attempt))
        guard ceiling > 0 else { return .zero }
        switch jitter {
        case .none: return .nanoseconds(ceiling)
        case .full: return .nanoseconds(Int64.random(in: 0...ceiling, using: &random))
        case .equal: return .nanoseconds(Int64.random(in: (ceiling - ceiling / 2)...ceiling, using: &random))
        }
    }

    /// The wait after attempt `attempt` (1-based), drawn from the system's random source.
    public func delay(afterAttempt attempt: Int) -> Duration {
        var random = SystemRandomNumberGenerator()
        return delay(afterAttempt: attempt, using: &random)
    }

    /// The wait after attempt `attempt` (1-based) for a random `fraction` the caller drew (clamped
    /// to 0…1; 0 is the shortest wait the jitter allows, 1 the ceiling).
    public func delay(afterAttempt attempt: Int, fraction: Double) -> Duration {
        let ceiling = ceiling(afterAttempt: attempt)
        let fraction = min(max(fraction, 0), 1)
        switch jitter {
        case .none: return ceiling
        case .full: return ceiling * fraction
        case .equal: return ceiling * (0.5 + 0.5 * fraction)
        }
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard seconds < Int64.max / 1_000_000_000 else { return Int64.max }
        guard seconds > Int64.min / 1_000_000_000 else { return Int64.min }
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
