import Foundation
public import HeraldCore
import Synchronization

/// Owns the provider token for one signing key, shared by every connection and caller.
///
/// Apple wants a token refreshed "no more than once every 20 minutes and no less than once every
/// 60 minutes" and answers `TooManyProviderTokenUpdates` to a connection that presents new tokens
/// faster (APNS.md §2.1). So:
///
/// - The first ``token()`` signs a token; later calls return it until it is
///   ``refreshInterval`` (50 minutes) old, by the clock's monotonic ``HeraldClock/uptime()`` or by
///   its wall clock (which supplies `iat`), whichever says older.
/// - No token is ever signed less than ``minimumRefreshInterval`` (20 minutes) after the previous
///   one, measured on the monotonic clock, whatever the callers do.
/// - ``invalidate(ifCurrent:)`` handles `ExpiredProviderToken`: when `token` is still the current
///   one, the next ``token()`` signs a new one — once, however many requests report the same token.
///   **Inside the 20-minute floor** (APNs called a token expired that is younger than 20 minutes,
///   which means the wall clock that stamped `iat` was wrong, or jumped), no new token is signed:
///   ``token()`` keeps returning the rejected token, so requests fail with
///   `ExpiredProviderToken` rather than the connection being throttled, and the refresh happens on
///   the first ``token()`` once the token is 20 minutes old. ``isCurrentTokenRejected`` reports the
///   state, for a readiness check.
///
/// Signing is synchronous inside the actor (a P-256 signature takes microseconds), so concurrent
/// callers cannot interleave: a thousand callers of a fresh manager cause one signature.
///
/// ```swift
/// let manager = APNSTokenManager(signingKey: key, clock: SystemClock())
/// let jwt = try await manager.token()
/// ```
public actor APNSTokenManager: APNSTokenProvider {
    public nonisolated let signingKey: APNSSigningKey
    /// Age at which a token is replaced. 50 minutes by default (Apple's limit is 60).
    public nonisolated let refreshInterval: Duration
    /// Shortest time between two signatures. 20 minutes, Apple's limit.
    public nonisolated let minimumRefreshInterval: Duration

    private nonisolated let clock: any HeraldClock
    private var current: Current? {
        didSet { publish() }
    }

    /// The current token while it needs no refresh, readable without hopping onto the actor, since
    /// the send path asks for it once per push. Written only by the actor.
    private nonisolated let fastPath = Mutex<APNSTokenFastPath?>(nil)

    /// How many tokens this manager has signed; for metrics and tests.
    public private(set) var tokensGenerated = 0

    private struct Current {
        var token: APNSProviderToken
        /// The clock's ``HeraldClock/uptime()`` at signing.
        var createdAt: Duration
        var rejected: Bool
    }

    /// - Parameters:
    ///   - signingKey: the key tokens are signed with.
    ///   - clock: times refreshes (its monotonic reading) and supplies `iat` (its wall clock).
    ///   - refreshInterval: clamped to 20…60 minutes.
    ///   - minimumRefreshInterval: clamped to at least 20 minutes and at most `refreshInterval`.
    public init(
        signingKey: APNSSigningKey,
        clock: any HeraldClock = SystemClock(),
        refreshInterval: Duration = .seconds(50 * 60),
        minimumRefreshInterval: Duration = .seconds(20 * 60)
    ) {
        let refresh = min(max(refreshInterval, .seconds(20 * 60)), .seconds(60 * 60))
        self.signingKey = signingKey
        self.clock = clock
        self.refreshInterval = refresh
        self.minimumRefreshInterval = min(max(minimumRefreshInterval, .seconds(20 * 60)), refresh)
    }

    /// The current token, signing a new one when none exists, the current one is
    /// ``refreshInterval`` old, or it was rejected and is at least ``minimumRefreshInterval`` old.
    ///
    /// - Throws: ``APNSCredentialError`` when signing fails.
    public func token() throws -> String {
        try currentToken().value
    }

    /// Like ``token()``, with the token's ids and `iat`.
    public func currentToken() throws(APNSCredentialError) -> APNSProviderToken {
        let now = clock.uptime()
        if let current {
            let age = now - current.createdAt
            let wallAge = Duration.seconds(clock.now().timeIntervalSince(current.token.issuedAt))
            let due = age >= refreshInterval || wallAge >= refreshInterval || current.rejected
            if !due || age < minimumRefreshInterval {
                return current.token
            }
        }
        let token = try APNSProviderToken(signingKey: signingKey, issuedAt: clock.now())
        current = Current(token: token, createdAt: now, rejected: false)
        tokensGenerated += 1
        return token
    }

    /// The current token when it is valid and not yet due for refresh, without waiting for the
    /// actor; `nil` when ``token()`` must decide (none yet, due, or rejected).
    public nonisolated func cachedToken() -> String? {
        cachedAuthorization()?.token
    }

    /// ``cachedToken()`` with its header value, made once per token.
    public nonisolated func cachedAuthorization() -> APNSAuthorization? {
        guard let fast = fastPath.withLock({ $0 }) else { return nil }
        guard clock.uptime() < fast.refreshAfter, clock.now() < fast.wallRefreshAt else { return nil }
        return fast.authorization
    }

    private func publish() {
        let fast = current.flatMap { current -> APNSTokenFastPath? in
            guard !current.rejected else { return nil }
            return APNSTokenFastPath(
                authorization: APNSAuthorization(token: current.token.value),
                refreshAfter: current.createdAt + refreshInterval,
                wallRefreshAt: current.token.issuedAt.addingTimeInterval(
                    TimeInterval(refreshInterval.components.seconds)
                )
            )
        }
        fastPath.withLock { $0 = fast }
    }

    /// Marks `token` as rejected by APNs (`ExpiredProviderToken`) when it is still the current
    /// token; otherwise (a newer token already exists) does nothing. See the type's documentation
    /// for what happens inside the 20-minute floor.
    public func invalidate(ifCurrent token: String) {
        guard current?.token.value == token else { return }
        current?.rejected = true
    }

    /// Whether APNs rejected the current token and it cannot be replaced yet.
    public var isCurrentTokenRejected: Bool { current?.rejected ?? false }
}

/// What ``APNSTokenManager/cachedToken()`` reads: the token and when it is due.
/// A class, so that every push's look at it under the lock is one retain, not a copy of its
/// fields.
private final class APNSTokenFastPath: Sendable {
    let authorization: APNSAuthorization
    /// Due once the manager's clock's ``HeraldClock/uptime()`` reaches this.
    let refreshAfter: Duration
    let wallRefreshAt: Date

    init(authorization: APNSAuthorization, refreshAfter: Duration, wallRefreshAt: Date) {
        self.authorization = authorization
        self.refreshAfter = refreshAfter
        self.wallRefreshAt = wallRefreshAt
    }
}
