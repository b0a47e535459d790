/// Settings for a ``Database`` that do not belong in `DATABASE_URL`: read from the environment by
/// the executable (`HERALD_DB_STATEMENT_TIMEOUT`, `HERALD_DB_ACQUIRE_TIMEOUT`) and handed down.
public struct DatabaseOptions: Sendable, Equatable {
    /// PostgreSQL cancels a statement that runs longer (`statement_timeout`); `.zero` sets none
    /// (the server's default applies).
    /// When `DATABASE_URL` sets libpq's `options` parameter, that applies instead.
    public var statementTimeout = Duration.seconds(30)
    /// How long a statement or transaction waits for a pooled PostgreSQL connection when all are
    /// in use before failing with ``DatabaseError/Code/acquireTimeout``; `nil` waits as long as it
    /// takes (tools and tests). `herald serve` sets it from `HERALD_DB_ACQUIRE_TIMEOUT`.
    public var acquireTimeout: Duration?
    /// TCP keepalive: idle seconds before the first probe, seconds between probes, and unanswered
    /// probes before the connection is declared dead. libpq parameters in the URL take precedence.
    public var keepaliveIdleSeconds = 30
    public var keepaliveIntervalSeconds = 10
    public var keepaliveCount = 3
    /// How long sent data may stay unacknowledged before the kernel drops the connection
    /// (`tcp_user_timeout`): a server gone without a FIN fails the statement instead of hanging.
    public var tcpUserTimeout = Duration.seconds(30)

    public init() {}
}
