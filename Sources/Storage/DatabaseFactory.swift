public import HeraldCore

/// Opens the ``Database`` a `DATABASE_URL` names: the only place that knows the concrete drivers.
public enum DatabaseFactory {
    /// Opens the database at `url` and checks that it answers.
    ///
    /// - Parameters:
    ///   - url: `sqlite:PATH`, `sqlite::memory:`, or `postgres://user:password@host:port/db?pool_size=4`
    ///     (see ``DatabaseURL``).
    ///   - logger: where the drivers log; the password is never logged.
    ///   - metrics: where statement durations, errors and reconnects are recorded.
    ///   - options: PostgreSQL's statement timeout, keepalives and pool acquire deadline.
    ///   - clock: PostgreSQL's pause before listening again after a failed LISTEN sleeps on it.
    /// - Returns: an open database; call ``Database/close()`` when done.
    /// - Throws: ``DatabaseError`` with ``DatabaseError/Code/invalidURL`` or
    ///   ``DatabaseError/Code/connectionFailed``.
    public static func open(
        url: String,
        logger: Logger,
        metrics: MetricsRegistry = .shared,
        options: DatabaseOptions = DatabaseOptions(),
        clock: any HeraldClock = SystemClock()
    ) async throws -> any Database {
        switch try DatabaseURL(parsing: url) {
        case .sqlite(let path):
            return try await SQLiteDatabase.open(path: path, logger: logger, metrics: metrics)
        case .postgres(let postgres):
            return try await PostgresDatabase.open(
                postgres,
                logger: logger,
                metrics: metrics,
                options: options,
                clock: clock
            )
        }
    }

    /// `url` with its password replaced by `***`, for logs.
    public static func redact(url: String) -> String {
        DatabaseURL.redact(url)
    }
}
