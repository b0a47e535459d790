import Synchronization

/// One token bucket per key (a user, an address), as a value: ``take(_:at:)`` answers whether a
/// request of that key may go now, or in how many whole seconds it may.
///
/// Memory is bounded: at most ``maximumKeys`` buckets are kept. A full bucket is the same as no
/// bucket, so when the table is full the buckets that refilled are dropped (at most once per
/// refill time, so that sweeps cost nothing per request); if every kept key is still active, keys
/// not yet tracked share one overflow bucket until a sweep makes room. Times are seconds of a
/// monotonic clock, given by the caller, so that every step can be tested without waiting.
public struct TokenBuckets<Key: Hashable & Sendable>: Sendable {
    /// What ``take(_:at:)`` decided.
    public enum Decision: Sendable, Hashable {
        case allowed
        /// Refused: a token is there again after this many whole seconds (at least 1).
        case refused(retryAfter: Int)
    }

    private struct Bucket: Sendable {
        var tokens: Double
        var updated: Double
    }

    public let limit: RateLimit
    /// The most keys kept; beyond, new keys share one bucket.
    public let maximumKeys: Int
    private var buckets: [Key: Bucket] = [:]
    private var overflow: Bucket?
    /// No sweep before this time: a bucket touched at the last sweep is full by then.
    private var nextSweep = -Double.infinity

    public init(limit: RateLimit, maximumKeys: Int = 100_000) {
        precondition(maximumKeys > 0, "a bucket table needs room for one key")
        self.limit = limit
        self.maximumKeys = maximumKeys
    }

    /// Buckets kept now (for tests and metrics).
    public var count: Int { buckets.count }

    /// The seconds an empty bucket takes to fill.
    private var refillSeconds: Double { Double(limit.burst) / limit.tokensPerSecond }

    /// Takes one token of `key`'s bucket at `now` (monotonic seconds), or says when one is there.
    public mutating func take(_ key: Key, at now: Double) -> Decision {
        if let bucket = buckets[key] {
            var updated = bucket
            let decision = Self.draw(&updated, limit, at: now)
            buckets[key] = updated
            return decision
        }
        if buckets.count >= maximumKeys { sweep(at: now) }
        guard buckets.count < maximumKeys else {
            var shared = overflow ?? Bucket(tokens: Double(limit.burst), updated: now)
            let decision = Self.draw(&shared, limit, at: now)
            overflow = shared
            return decision
        }
        var fresh = Bucket(tokens: Double(limit.burst), updated: now)
        let decision = Self.draw(&fresh, limit, at: now)
        buckets[key] = fresh
        return decision
    }

    /// Drops the buckets that are full again at `now`: the same as having none.
    public mutating func sweep(at now: Double) {
        guard now >= nextSweep else { return }
        let refill = refillSeconds
        buckets = buckets.filter {
            $0.value.tokens + (now - $0.value.updated) * limit.tokensPerSecond < Double(limit.burst)
        }
        if let shared = overflow, shared.tokens + (now - shared.updated) * limit.tokensPerSecond >= Double(limit.burst)
        {
            overflow = nil
        }
        // At least a second apart, however fast buckets refill.
        nextSweep = now + max(1, refill)
    }

    private static func draw(_ bucket: inout Bucket, _ limit: RateLimit, at now: Double) -> Decision {
        let rate = limit.tokensPerSecond
        // A clock read out of order (two threads) never takes tokens away.
        let elapsed = max(0, now - bucket.updated)
        bucket.tokens = min(Double(limit.burst), bucket.tokens + elapsed * rate)
        bucket.updated = max(bucket.updated, now)
        if bucket.tokens >= 1 {
            bucket.tokens -= 1
            return .allowed
        }
        let wait = ((1 - bucket.tokens) / rate).rounded(.up)
        return .refused(retryAfter: max(1, Int(min(wait, 86_400))))
    }
}

/// ``TokenBuckets`` behind a `Mutex`, timed by a clock's monotonic ``HeraldClock/uptime()``: one
/// per limit, shared by every thread that answers requests. Kept in this process's memory: each
/// instance of several counts on its own.
public final class RateLimiter<Key: Hashable & Sendable>: Sendable {
    private let buckets: Mutex<TokenBuckets<Key>>
    private let clock: any HeraldClock

    public var limit: RateLimit { buckets.withLock { $0.limit } }

    /// - Parameters:
    ///   - clock: its ``HeraldClock/uptime()`` times the buckets; tests pass a ``ManualClock``.
    public init(_ limit: RateLimit, maximumKeys: Int = 100_000, clock: any HeraldClock = SystemClock()) {
        self.buckets = Mutex(TokenBuckets(limit: limit, maximumKeys: maximumKeys))
        self.clock = clock
    }

    /// Takes a token of `key`'s bucket now.
    public func take(_ key: Key) -> TokenBuckets<Key>.Decision {
        let now = clock.uptime().timeInterval
        return buckets.withLock { $0.take(key, at: now) }
    }
}
