import HeraldCore

/// The metrics every driver records, labelled with `driver` (`sqlite` or `postgres`).
struct DatabaseMetrics: Sendable {
    private let duration: Histogram
    private let errors: Counter
    private let reconnects: Counter
    private let driver: String

    init(registry: MetricsRegistry, dialect: SQLDialect) {
        self.driver = dialect.rawValue
        self.duration = registry.histogram(
            "herald_db_statement_duration_seconds",
            help: "Time to run one database statement, including waiting for a connection."
        )
        self.errors = registry.counter(
            "herald_db_errors_total",
            help: "Database statements that failed, by error code."
        )
        self.reconnects = registry.counter(
            "herald_db_reconnects_total",
            help: "Database connections re-opened after they were found broken."
        )
    }

    /// Times `body` and counts its failure, if any.
    func measure<T>(_ body: () async throws -> T) async throws -> T {
        let start = ContinuousClock.now
        do {
            let result = try await body()
            duration.observe(ContinuousClock.now - start, labels: [("driver", driver)])
            return result
        } catch {
            duration.observe(ContinuousClock.now - start, labels: [("driver", driver)])
            let code = (error as? DatabaseError)?.code.description ?? "other"
            errors.increment(labels: [("driver", driver), ("code", code)])
            throw error
        }
    }

    func recordReconnect() {
        reconnects.increment(labels: [("driver", driver)])
    }
}
