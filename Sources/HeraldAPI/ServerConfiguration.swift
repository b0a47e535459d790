public import HeraldCore

/// What `herald serve` needs, read from the environment (DESIGN.md, Configuration) and overridden
/// by command-line flags where a person would type them.
public struct ServerConfiguration: Sendable, Equatable {
    public var host = "0.0.0.0"
    public var port = 3000
    public var logLevel = LogLevel.info
    public var logFormat = StreamLogHandler.Format.text
    public var databaseURL = "sqlite:herald.sqlite"
    /// Largest request body `/v1` and the relay accept.
    public var maxBodySize = 1 << 20
    /// How long in-flight requests may take to finish after SIGINT/SIGTERM.
    public var shutdownTimeout = Duration.seconds(8)
    /// PostgreSQL's statement timeout (`HERALD_DB_STATEMENT_TIMEOUT`, seconds; 0 turns it off).
    public var databaseStatementTimeout = Duration.seconds(30)
    /// How long a request waits for a pooled PostgreSQL connection before 503
    /// (`HERALD_DB_ACQUIRE_TIMEOUT`, seconds).
    public var databaseAcquireTimeout = Duration.seconds(30)
    /// The most a request may take to arrive whole, headers and body (`HERALD_REQUEST_TIMEOUT`).
    public var requestTimeout = Duration.seconds(30)
    /// Open connections at most per client address (`HERALD_MAX_CONNECTIONS_PER_IP`); `nil`: no limit.
    public var maxConnectionsPerIP: Int?

    public init() {}

    /// Reads `HOST`, `PORT`, `LOG_LEVEL`, `LOG_FORMAT`, `DATABASE_URL`, `HERALD_MAX_BODY_BYTES`,
    /// `HERALD_DB_STATEMENT_TIMEOUT`, `HERALD_DB_ACQUIRE_TIMEOUT`, `HERALD_REQUEST_TIMEOUT` and
    /// `HERALD_MAX_CONNECTIONS_PER_IP`,
    /// then applies `overrides` (flag name → value: `host`, `port`, `database-url`).
    public static func load(
        environment: [String: String],
        overrides: [String: String] = [:]
    ) throws(ConfigurationError) -> ServerConfiguration {
        var merged = environment
        if let host = overrides["host"] { merged[Setting.host.name] = host }
        if let port = overrides["port"] { merged[Setting.port.name] = port }
        if let url = overrides["database-url"] { merged[Setting.databaseURL.name] = url }

        var reader = EnvironmentReader(merged)
        var configuration = ServerConfiguration()
        configuration.host = reader.string(.host) ?? configuration.host
        configuration.port = reader.integer(.port) ?? configuration.port
        configuration.logLevel = reader.choice(
            .logLevel,
            default: configuration.logLevel,
            { LogLevel(name: $0) },
            allowed: LogLevel.allCases.map(\.description).joined(separator: ", ")
        )
        configuration.logFormat = reader.choice(
            .logFormat,
            default: configuration.logFormat,
            { StreamLogHandler.Format(rawValue: $0.lowercased()) },
            allowed: "text, json"
        )
        configuration.maxBodySize = reader.integer(.maxBodyBytes) ?? configuration.maxBodySize
        configuration.databaseStatementTimeout = .seconds(reader.integer(.databaseStatementTimeout) ?? 30)
        configuration.databaseAcquireTimeout = .seconds(reader.integer(.databaseAcquireTimeout) ?? 30)
        configuration.requestTimeout = .seconds(reader.integer(.requestTimeout) ?? 30)
        configuration.maxConnectionsPerIP = reader.integer(.maxConnectionsPerIP)
        if let url = reader.string(.databaseURL) {
            if url.hasPrefix("sqlite:") || url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
                configuration.databaseURL = url
            } else {
                reader.report("DATABASE_URL is not valid: use \(Setting.databaseURL.accepted)")
            }
        }
        try reader.validate()
        return configuration
    }
}
