/// Makes the transports an APNs client provider's clients send through: one per host and set of
/// credentials, made when the first push for them goes out. The connection pool's factory is the
/// production one; tests put an in-memory APNs behind this seam so that the domains (notifications,
/// Live Activities, wake) run without sockets.
///
/// ```swift
/// let clients = APNSClientProvider(
///     apps: apps,
///     endpoints: endpoints,
///     transports: APNSConnectionPoolFactory(logger: logger),
///     clock: SystemClock()
/// )
/// ```
public protocol APNSTransportFactory: Sendable {
    /// A transport to `endpoint` for a client with `credentials`.
    ///
    /// - Parameters:
    ///   - endpoint: the host the transport talks to (one environment's push or management host).
    ///   - caFile: extra trusted roots for the host's certificate (a simulator's CA), if any.
    ///   - credentials: a certificate is presented by the transport in TLS; a signing key is the
    ///     client's business (it adds `authorization`), and the transport ignores it.
    func makeTransport(
        to endpoint: APNSEndpoint,
        caFile: String?,
        credentials: APNSCredentials
    ) -> any APNSTransport

    /// Closes a transport this factory made: it stops taking requests, lets those inside finish
    /// and closes its connections.
    func shutdown(_ transport: any APNSTransport) async
}
