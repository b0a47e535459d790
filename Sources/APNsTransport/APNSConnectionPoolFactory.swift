public import APNs
public import HeraldCore

/// The production ``APNs/APNSTransportFactory``: an ``APNSConnectionPool`` per host and set of
/// credentials, over TLS with the credentials' certificate (if any) and the extra trusted roots.
public struct APNSConnectionPoolFactory: APNSTransportFactory {
    public var configuration: APNSConnectionPool.Configuration
    public var logger: Logger
    public var metrics: MetricsRegistry
    public var clock: any HeraldClock

    /// - Parameters:
    ///   - configuration: connections per pool and timeouts.
    ///   - logger: the pools' connects, disconnects and connect failures.
    ///   - metrics: where the pools' metrics go.
    ///   - clock: times the pools' reconnect backoff.
    public init(
        configuration: APNSConnectionPool.Configuration = APNSConnectionPool.Configuration(),
        logger: Logger,
        metrics: MetricsRegistry = .shared,
        clock: any HeraldClock = SystemClock()
    ) {
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
        self.clock = clock
    }

    public func makeTransport(
        to endpoint: APNSEndpoint,
        caFile: String?,
        credentials: APNSCredentials
    ) -> any APNSTransport {
        APNSConnectionPool(
            endpoint: endpoint,
            tls: APNSTLSConfiguration(caFile: caFile, credentials: credentials),
            configuration: configuration,
            logger: logger,
            metrics: metrics,
            clock: clock
        )
    }

    public func shutdown(_ transport: any APNSTransport) async {
        await (transport as? APNSConnectionPool)?.shutdown()
    }
}
