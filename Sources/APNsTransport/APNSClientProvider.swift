public import APNs
import Foundation
public import HeraldCore
import Synchronization

/// The APNs clients every sender uses (notifications, the relay): one connection pool and client
/// per (app, environment), made on first use and shared by every send after, all counted in one
/// ``APNSSendBudget``; apps that share a signing key share its provider token.
///
/// ```swift
/// let clients = APNSClientProvider(apps: apps, endpoints: endpoints, logger: logger)
/// let client = try clients.client(for: apps[0], environment: .production)
/// …
/// await clients.shutdown()
/// ```
public final class APNSClientProvider: Sendable {
    public let apps: [APNSAppConfiguration]
    public let endpoints: APNSEndpoints
    private let poolConfiguration: APNSConnectionPool.Configuration
    private let retryPolicy: APNSRetryPolicy
    /// Shared by every client made here: one count of pushes waiting for APNs, whoever sends.
    public let budget: APNSSendBudget
    private let logger: Logger
    private let metrics: MetricsRegistry
    private let state = Mutex(State())

    private struct Key: Hashable {
        var bundleID: String
        var environment: APNSEnvironment
        /// A client of the channel management host rather than the push host.
        var management = false
    }

    private struct State {
        var clients: [Key: (APNSClient, APNSConnectionPool)] = [:]
        var tokenManagers: [String: any APNSTokenProvider] = [:]
        var isShutDown = false
    }

    /// - Parameters:
    ///   - apps: the configured apps; the first is the default.
    ///   - endpoints: where each environment's pushes go, and extra trusted roots.
    ///   - poolConfiguration: connections per pool and timeouts.
    ///   - retryPolicy: the clients' retries of one push (429, 5xx, connection trouble); what is
    ///     still failing after them is retried by the notification's job.
    ///   - budget: how many pushes may wait for APNs, across every client made here.
    public init(
        apps: [APNSAppConfiguration],
        endpoints: APNSEndpoints,
        poolConfiguration: APNSConnectionPool.Configuration = APNSConnectionPool.Configuration(),
        retryPolicy: APNSRetryPolicy = .default,
        budget: APNSSendBudget = APNSSendBudget(),
        logger: Logger = Logger(label: "herald.apns"),
        metrics: MetricsRegistry = .shared
    ) {
        self.apps = apps
        self.endpoints = endpoints
        self.poolConfiguration = poolConfiguration
        self.retryPolicy = retryPolicy
        self.budget = budget
        self.logger = logger
        self.metrics = metrics
    }

    /// The shared client for `app` in `environment`, made on first use.
    public func client(for app: APNSAppConfiguration, environment: APNSEnvironment) throws -> APNSClient {
        try connection(for: app, environment: environment).client
    }

    /// The shared client for `app` in `environment` and the pool under it, made on first use:
    /// everything that pushes for that app (notifications, the relay) shares one pool and one
    /// provider token.
    public func connection(
        for app: APNSAppConfiguration,
        environment: APNSEnvironment
    ) throws -> (client: APNSClient, pool: APNSConnectionPool) {
        try connection(for: app, environment: environment, management: false)
    }

    /// The shared client for `app`'s broadcast channel management (create, read, list, delete) in
    /// `environment`: on the management host (``APNs/APNSEndpoints/management(_:)``), with the
    /// app's provider token; made on first use.
    public func managementClient(for app: APNSAppConfiguration, environment: APNSEnvironment) throws -> APNSClient {
        try connection(for: app, environment: environment, management: true).client
    }

    private func connection(
        for app: APNSAppConfiguration,
        environment: APNSEnvironment,
        management: Bool
    ) throws -> (client: APNSClient, pool: APNSConnectionPool) {
        let key = Key(bundleID: app.bundleID, environment: environment, management: management)
        return try state.withLock { state in
            guard !state.isShutDown else { throw CancellationError() }
            if let (client, pool) = state.clients[key] { return (client, pool) }
            var tokens: (any APNSTokenProvider)?
            if let signingKey = app.credentials.signingKey {
                let name = "\(signingKey.teamID)/\(signingKey.keyID)"
                tokens = state.tokenManagers[name] ?? APNSTokenManager(signingKey: signingKey, clock: SystemClock())
                state.tokenManagers[name] = tokens
            }
            let pool = APNSConnectionPool(
                endpoint: management ? endpoints.management(environment) : endpoints.push(environment),
                tls: APNSTLSConfiguration(caFile: endpoints.caFile, credentials: app.credentials),
                configuration: poolConfiguration,
                logger: logger,
                metrics: metrics
            )
            let client = APNSClient(
                transport: pool,
                credentials: app.credentials,
                tokenProvider: tokens,
                retryPolicy: retryPolicy,
                budget: budget,
                logger: logger
            )
            state.clients[key] = (client, pool)
            return (client, pool)
        }
    }

    /// The pools opened so far, for `/readyz`.
    public var pools: [APNSConnectionPool] {
        state.withLock { $0.clients.values.map(\.1) }
    }

    /// Closes every pool; later ``client(for:environment:)`` calls throw.
    public func shutdown() async {
        let pools = state.withLock { state in
            state.isShutDown = true
            return state.clients.values.map(\.1)
        }
        for pool in pools { await pool.shutdown() }
    }
}
