public import APNs
import Foundation
public import HeraldCore
import Synchronization

/// The APNs clients every sender uses (notifications, the relay): one transport and client per
/// (app, environment), made on first use and shared by every send after, all counted in one
/// ``APNSSendBudget``; apps that share a signing key share its provider token.
///
/// The transports come from an ``APNs/APNSTransportFactory`` (``APNSConnectionPoolFactory`` in
/// production, an in-memory APNs in the domains' tests); retry waits and provider tokens read
/// the time from the clock given.
///
/// ```swift
/// let clients = APNSClientProvider(
///     apps: apps,
///     endpoints: endpoints,
///     transports: APNSConnectionPoolFactory(logger: logger),
///     clock: SystemClock(),
///     logger: logger
/// )
/// let client = try clients.client(for: apps[0], environment: .production)
/// …
/// await clients.shutdown()
/// ```
public final class APNSClientProvider: Sendable {
    public let apps: [APNSAppConfiguration]
    public let endpoints: APNSEndpoints
    private let transports: any APNSTransportFactory
    private let clock: any HeraldClock
    private let retryPolicy: APNSRetryPolicy
    /// Shared by every client made here: one count of pushes waiting for APNs, whoever sends.
    public let budget: APNSSendBudget
    private let logger: Logger
    private let state = Mutex(State())

    private struct Key: Hashable {
        var bundleID: String
        var environment: APNSEnvironment
        /// A client of the channel management host rather than the push host.
        var management = false
    }

    private struct State {
        var clients: [Key: (APNSClient, any APNSTransport)] = [:]
        var tokenManagers: [String: any APNSTokenProvider] = [:]
        var isShutDown = false
    }

    /// - Parameters:
    ///   - apps: the configured apps; the first is the default.
    ///   - endpoints: where each environment's pushes go, and extra trusted roots.
    ///   - transports: makes each client's transport (``APNSConnectionPoolFactory`` in production).
    ///   - clock: the clients' retry waits sleep on it; their provider tokens are stamped and
    ///     refreshed by it.
    ///   - retryPolicy: the clients' retries of one push (429, 5xx, connection trouble); what is
    ///     still failing after them is retried by the notification's job.
    ///   - budget: how many pushes may wait for APNs, across every client made here.
    public init(
        apps: [APNSAppConfiguration],
        endpoints: APNSEndpoints,
        transports: any APNSTransportFactory,
        clock: any HeraldClock,
        retryPolicy: APNSRetryPolicy = .default,
        budget: APNSSendBudget = APNSSendBudget(),
        logger: Logger = Logger(label: "herald.apns")
    ) {
        self.apps = apps
        self.endpoints = endpoints
        self.transports = transports
        self.clock = clock
        self.retryPolicy = retryPolicy
        self.budget = budget
        self.logger = logger
    }

    /// The shared client for `app` in `environment`, made on first use.
    public func client(for app: APNSAppConfiguration, environment: APNSEnvironment) throws -> APNSClient {
        try connection(for: app, environment: environment).client
    }

    /// The shared client for `app` in `environment` and the transport under it, made on first use:
    /// everything that pushes for that app (notifications, the relay) shares one transport and one
    /// provider token.
    public func connection(
        for app: APNSAppConfiguration,
        environment: APNSEnvironment
    ) throws -> (client: APNSClient, transport: any APNSTransport) {
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
    ) throws -> (client: APNSClient, transport: any APNSTransport) {
        let key = Key(bundleID: app.bundleID, environment: environment, management: management)
        return try state.withLock { state in
            guard !state.isShutDown else { throw CancellationError() }
            if let (client, transport) = state.clients[key] { return (client, transport) }
            var tokens: (any APNSTokenProvider)?
            if let signingKey = app.credentials.signingKey {
                let name = "\(signingKey.teamID)/\(signingKey.keyID)"
                tokens = state.tokenManagers[name] ?? APNSTokenManager(signingKey: signingKey, clock: clock)
                state.tokenManagers[name] = tokens
            }
            let transport = transports.makeTransport(
                to: management ? endpoints.management(environment) : endpoints.push(environment),
                caFile: endpoints.caFile,
                credentials: app.credentials
            )
            let client = APNSClient(
                transport: transport,
                credentials: app.credentials,
                tokenProvider: tokens,
                retryPolicy: retryPolicy,
                budget: budget,
                clock: clock,
                logger: logger
            )
            state.clients[key] = (client, transport)
            return (client, transport)
        }
    }

    /// The transports made so far.
    public var openTransports: [any APNSTransport] {
        state.withLock { $0.clients.values.map(\.1) }
    }

    /// The connection pools among the transports made so far, for `/readyz`.
    public var pools: [APNSConnectionPool] {
        openTransports.compactMap { $0 as? APNSConnectionPool }
    }

    /// Closes every transport; later ``client(for:environment:)`` calls throw.
    public func shutdown() async {
        let made = state.withLock { state in
            state.isShutDown = true
            return state.clients.values.map(\.1)
        }
        for transport in made { await transports.shutdown(transport) }
    }
}
