public import HeraldCore

/// When the client sends a refused or failed request again, and after how long.
///
/// Retried: responses whose status is in ``retryableStatuses`` (429, 500, 503 by default) unless
/// their reason is a known permanent one, and transport errors ``isRetryableTransportError``
/// accepts (by default those conforming to ``APNSRetryableError`` with `isSafeToRetry`). Never
/// retried: everything else, `CancellationError`, and anything once ``maxAttempts`` is reached.
///
/// The wait before attempt *n*+1 is drawn uniformly from zero to
/// `min(maxBackoff, initialBackoff × 2^(n-1))` ("full jitter"), so that many senders refused at
/// once do not come back at once. A `Retry-After` header no longer than ``maxBackoff`` is
/// waited for exactly; a longer one ends the retries, leaving the caller (a job queue) to
/// reschedule. The functions are pure: the caller passes the random source.
public struct APNSRetryPolicy: Sendable {
    /// Attempts in all, the first included; 1 means never retry.
    public var maxAttempts: Int
    /// The ceiling of the first wait.
    public var initialBackoff: Duration
    /// The ceiling of any wait.
    public var maxBackoff: Duration
    /// Statuses worth another attempt.
    public var retryableStatuses: Set<Int>
    /// Whether a transport error may be retried without risk of delivering twice.
    public var isRetryableTransportError: @Sendable (any Error) -> Bool

    /// 3 attempts, waits up to 0.5 s then 1 s (at most 10 s), statuses 429, 500 and 503.
    public init(
        maxAttempts: Int = 3,
        initialBackoff: Duration = .milliseconds(500),
        maxBackoff: Duration = .seconds(10),
        retryableStatuses: Set<Int> = [429, 500, 503],
        isRetryableTransportError: @escaping @Sendable (any Error) -> Bool = APNSRetryPolicy.isSafeToRetry
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.retryableStatuses = retryableStatuses
        self.isRetryableTransportError = isRetryableTransportError
    }

    public static let `default` = APNSRetryPolicy()

    /// One attempt only.
    public static let never = APNSRetryPolicy(maxAttempts: 1)

    /// The default transport-error predicate: ``APNSRetryableError/isSafeToRetry``, `false` for
    /// anything else (including `CancellationError`).
    public static func isSafeToRetry(_ error: any Error) -> Bool {
        (error as? any APNSRetryableError)?.isSafeToRetry ?? false
    }

    /// What to do after a failed attempt.
    public enum Decision: Sendable, Hashable {
        case retry(after: Duration)
        case giveUp
    }

    /// Whether a refusal is worth another attempt at all (ignoring the attempt count).
    public func isRetryable(_ response: APNSErrorResponse) -> Bool {
        guard retryableStatuses.contains(response.status) else { return false }
        // A known reason decides (a 500 saying BadDeviceToken is not retried); otherwise the status does.
        return response.reason.isKnown ? response.category == .retryable : true
    }

    /// The decision after attempt number `attempt` (1-based) was refused with `response`.
    public func decision(
        after response: APNSErrorResponse,
        attempt: Int,
        using random: inout some RandomNumberGenerator
    ) -> Decision {
        guard attempt < maxAttempts, isRetryable(response) else { return .giveUp }
        if let retryAfter = response.retryAfter {
            return retryAfter <= maxBackoff ? .retry(after: retryAfter) : .giveUp
        }
        return .retry(after: backoff(afterAttempt: attempt, using: &random))
    }

    /// The decision after attempt number `attempt` (1-based) failed with a transport error.
    public func decision(
        afterTransportError error: any Error,
        attempt: Int,
        using random: inout some RandomNumberGenerator
    ) -> Decision {
        guard attempt < maxAttempts, !(error is CancellationError), isRetryableTransportError(error) else {
            return .giveUp
        }
        return .retry(after: backoff(afterAttempt: attempt, using: &random))
    }

    /// A full-jitter wait after attempt `attempt` (1-based): uniform in
    /// `0...min(maxBackoff, initialBackoff × 2^(attempt-1))`, in whole nanoseconds.
    public func backoff(afterAttempt attempt: Int, using random: inout some RandomNumberGenerator) -> Duration {
        schedule.delay(afterAttempt: attempt, using: &random)
    }

    /// The largest wait ``backoff(afterAttempt:using:)`` can return.
    public func ceiling(afterAttempt attempt: Int) -> Duration {
        schedule.ceiling(afterAttempt: attempt)
    }

    /// The waits as HeraldCore's one backoff type: full jitter under the doubling ceiling.
    public var schedule: Backoff {
        Backoff(initial: initialBackoff, maximum: maxBackoff, jitter: .full)
    }
}
