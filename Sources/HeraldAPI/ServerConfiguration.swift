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
        if let host = overrides["host"] { merged["HOST"] = host }
        if let port = overrides["port"] { merged["PORT"] = port }
        if let url = overrides["database-url"] { merged["DATABASE_URL"] = url }

        var reader = EnvironmentReader(merged)
        var configuration = ServerConfiguration()
        configuration.host = reader.string("HOST") ?? configuration.host
        configuration.port = reader.integer("PORT", default: configuration.port, range: 0...65_535)
        configuration.logLevel = reader.choice(
            "LOG_LEVEL",
            default: configuration.logLevel,
            { LogLevel(name: $0) },
            allowed: LogLevel.allCases.map(\.description).joined(separator: ", ")
        )
        configuration.logFormat = reader.choice(
            "LOG_FORMAT",
            default: configuration.logFormat,
            { StreamLogHandler.Format(rawValue: $0.lowercased()) },
            allowed: "text, json"
        )
        configuration.maxBodySize = reader.integer(
            "HERALD_MAX_BODY_BYTES",
            default: configuration.maxBodySize,
            range: 4096...(64 << 20)
        )
        configuration.databaseStatementTimeout = .seconds(
            reader.integer("HERALD_DB_STATEMENT_TIMEOUT", default: 30, range: 0...86_400)
        )
        configuration.databaseAcquireTimeout = .seconds(
            reader.integer("HERALD_DB_ACQUIRE_TIMEOUT", default: 30, range: 1...600)
        )
        if let text = reader.string("HERALD_REQUEST_TIMEOUT") {
            if let seconds = Int(text), (1...3_600).contains(seconds) {
                configuration.requestTimeout = .seconds(seconds)
            } else {
                reader.report(
                    "HERALD_REQUEST_TIMEOUT=\(text) is not valid: use a whole number of seconds from 1 to 3600 "
                        + "(how long a client may take to send one request, headers and body; default 30)"
                )
            }
        }
        if let text = reader.string("HERALD_MAX_CONNECTIONS_PER_IP") {
            if let limit = Int(text), (1...1_024).contains(limit) {
                configuration.maxConnectionsPerIP = limit
            } else {
                reader.report(
                    "HERALD_MAX_CONNECTIONS_PER_IP=\(text) is not valid: use a whole number from 1 to 1024 "
                        + "(open connections per client address), or leave it unset for no limit"
                )
            }
        }
        if let url = reader.string("DATABASE_URL") {
            if url.hasPrefix("sqlite:") || url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
                configuration.databaseURL = url
            } else {
                reader.report(
                    "DATABASE_URL is not valid: use sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE"
                )
            }
        }
        try reader.validate()
        return configuration
    }
}
