public import Foundation

/// Herald's one source of time: the wall clock for timestamps, schedules and `iat`, a monotonic
/// reading for intervals, and sleeping until a wall-clock time.
///
/// Production code takes `any HeraldClock` (``SystemClock`` by default); tests pass a
/// ``ManualClock`` and move it, which also wakes whatever sleeps on it.
public protocol HeraldClock: Sendable {
    /// The time of day.
    func now() -> Date

    /// A reading that never goes back, from an arbitrary origin: for ages and elapsed time, which
    /// must not jump when the wall clock is set.
    func uptime() -> Duration

    /// Returns once ``now()`` reads `deadline` or later.
    ///
    /// - Throws: `CancellationError` when the task is cancelled first.
    func sleep(until deadline: Date) async throws

    /// Returns once `duration` has passed on this clock.
    ///
    /// - Throws: `CancellationError` when the task is cancelled first.
    func sleep(for duration: Duration) async throws
}

extension HeraldClock {
    /// Sleeps until ``now()`` plus `duration`.
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: now().addingTimeInterval(duration.timeInterval))
    }

    /// The time since `start`, a reading of ``uptime()``.
    public func elapsed(since start: Duration) -> Duration {
        uptime() - start
    }
}

/// The real clocks: `Date()` for the time of day, `ContinuousClock` for intervals and sleeps.
public struct SystemClock: HeraldClock {
    /// The origin of ``uptime()``, fixed at load, so that readings fit a `Duration`.
    private static let origin = ContinuousClock.now

    public init() {}

    public func now() -> Date { Date() }

    public func uptime() -> Duration { Self.origin.duration(to: .now) }

    /// Sleeps for the time between now and `deadline` (at most a year at a time).
    public func sleep(until deadline: Date) async throws {
        let seconds = min(deadline.timeIntervalSince(Date()), 86_400 * 365)
        guard seconds > 0 else { return try Task.checkCancellation() }
        try await Task.sleep(for: .microseconds(Int64((seconds * 1_000_000).rounded(.up))))
    }

    /// Sleeps on the monotonic clock.
    public func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }
}

extension Duration {
    /// This duration in seconds, as `Date` arithmetic takes it.
    public var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// `seconds` as a duration, to the nanosecond, clamped to what a `Duration` of nanoseconds
    /// holds (about 292 years either way).
    public init(timeInterval seconds: TimeInterval) {
        let nanoseconds = (seconds * 1e9).rounded()
        guard nanoseconds.isFinite, abs(nanoseconds) < 9.2e18 else {
            self = .nanoseconds(nanoseconds.isNaN ? 0 : (nanoseconds < 0 ? Int64.min : Int64.max))
            return
        }
        self = .nanoseconds(Int64(nanoseconds))
    }
}
