public import ClientTokens
public import HTTPRouting
public import HeraldCore

/// The rate limits of `/v1/client` (HERALD_CLIENT_RATE_LIMIT, HERALD_CLIENT_IP_RATE_LIMIT): one
/// token bucket per client address, checked before the client token is verified (a cheap
/// refusal), and one per user (the token's `sub`, per app), checked after. A refusal is 429
/// `rate_limited` with `Retry-After`, counted in `herald_client_rate_limited_total{scope}`.
///
/// The buckets live in this process's memory: each instance of several counts on its own, and a
/// restart forgets them. The table of each limit is bounded (``TokenBuckets``).
public final class ClientRateLimiter: Sendable {
    /// The limits as configured; `nil`: that limit is off.
    public struct Limits: Sendable, Hashable {
        public var user: RateLimit?
        public var address: RateLimit?

        public init(user: RateLimit? = nil, address: RateLimit? = nil) {
            self.user = user
            self.address = address
        }

        /// Reads HERALD_CLIENT_RATE_LIMIT and HERALD_CLIENT_IP_RATE_LIMIT (defaults `10/s,60` and
        /// `50/s,300`).
        ///
        /// - Throws: ``HeraldCore/ConfigurationError`` naming the variable and what to write.
        public static func load(environment: [String: String]) throws(ConfigurationError) -> Limits {
            var reader = EnvironmentReader(environment)
            let limits = Limits(user: reader.rateLimit(.clientRateLimit), address: reader.rateLimit(.clientIPRateLimit))
            try reader.validate()
            return limits
        }
    }

    private let users: RateLimiter<String>?
    private let addresses: RateLimiter<String>?
    private let refusedUsers: LabelledCounter
    private let refusedAddresses: LabelledCounter

    /// - Parameters:
    ///   - clock: times the buckets (its monotonic ``HeraldCore/HeraldClock/uptime()``).
    ///   - maximumKeys: the most buckets each limit keeps.
    public init(
        _ limits: Limits,
        clock: any HeraldClock = SystemClock(),
        maximumKeys: Int = 100_000,
        metrics: MetricsRegistry = .shared
    ) {
        users = limits.user.map { RateLimiter($0, maximumKeys: maximumKeys, clock: clock) }
        addresses = limits.address.map { RateLimiter($0, maximumKeys: maximumKeys, clock: clock) }
        let refused = metrics.counter(
            "herald_client_rate_limited_total",
            help: "Requests to /v1/client refused with 429, by the limit that refused them (user or ip)."
        )
        refusedUsers = refused.labelled([("scope", "user")])
        refusedAddresses = refused.labelled([("scope", "ip")])
    }

    /// 429 when the request's address has no token left; `nil` lets it on.
    public func checkAddress(_ request: HTTPRequest) -> HTTPResponse? {
        guard let addresses else { return nil }
        guard case .refused(let seconds) = addresses.take(ClientAddress.rateLimitKey(request.remoteAddress)) else {
            return nil
        }
        refusedAddresses.increment()
        return .rateLimited(
            retryAfter: seconds,
            message: "too many requests from this address (HERALD_CLIENT_IP_RATE_LIMIT \(addresses.limit)): "
                + "retry after \(seconds) s"
        )
    }

    /// 429 when the token's user has no token left; `nil` lets it on.
    public func checkUser(_ claims: ClientTokenClaims) -> HTTPResponse? {
        guard let users else { return nil }
        // A sub has no control characters: the newline cannot be part of either.
        guard case .refused(let seconds) = users.take((claims.app ?? "") + "\n" + claims.subject) else { return nil }
        refusedUsers.increment()
        return .rateLimited(
            retryAfter: seconds,
            message: "too many requests for this user (HERALD_CLIENT_RATE_LIMIT \(users.limit)): "
                + "retry after \(seconds) s"
        )
    }
}
