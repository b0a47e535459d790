import Foundation
public import HeraldCore

/// Applies numbered ``Migration``s at start-up.
///
/// All pending migrations run in one transaction, recorded in
/// `schema_migrations(version, name, applied_at)`, so a failure leaves the schema as it was. Safe
/// when several instances start at once: on PostgreSQL the transaction first takes
/// `pg_advisory_xact_lock(`` advisoryLockKey ``)` and only then reads which versions are applied;
/// on SQLite the transaction is `BEGIN IMMEDIATE`, which holds the write lock from the start, and
/// a migrator that finds the lock held past the busy timeout tries again for up to
/// ``lockWait``, as PostgreSQL's advisory lock waits without a statement timeout.
///
/// ```swift
/// try await Migrator.migrate(db, StorageMigrations.all, logger: logger)
/// ```
public enum Migrator {
    /// The PostgreSQL advisory lock key that serialises migrators ("HERALDMG" in ASCII).
    public static let advisoryLockKey: Int64 = 0x4845_5241_4C44_4D47

    /// How long a migrator keeps retrying on SQLite while another process holds the write lock.
    public static let lockWait: Duration = .seconds(120)

    /// Applies every migration in `migrations` not yet recorded in the database.
    ///
    /// - Throws: ``DatabaseError`` with ``DatabaseError/Code/migrationFailed`` when the list is
    ///   invalid or a migration's SQL fails (its message names the migration).
    public static func migrate(_ db: any Database, _ migrations: [Migration], logger: Logger) async throws {
        try validate(migrations)
        let pending = migrations.sorted { $0.version < $1.version }
        let clock = ContinuousClock()
        let start = clock.now
        let report = try await waitingForTheLock(db, logger: logger, clock: clock) {
            try await apply(pending, on: db, clock: clock)
        }
        log(report, dialect: db.dialect, latest: pending.last?.version ?? 0, since: start, clock: clock, logger: logger)
    }

    /// Runs `attempt`, and again while it fails because another SQLite connection held the write
    /// lock past the busy timeout, until ``lockWait`` has passed since the first try.
    private static func waitingForTheLock<T>(
        _ db: any Database,
        logger: Logger,
        clock: ContinuousClock,
        _ attempt: () async throws -> T
    ) async throws -> T {
        let deadline = clock.now + lockWait
        while true {
            do {
                return try await attempt()
            } catch let error as DatabaseError where error.code == .lockTimeout && db.dialect == .sqlite {
                guard clock.now < deadline else { throw error }
                logger.info("waiting for another process's migrations to release the database lock")
            }
        }
    }

    /// Applies the migrations not yet recorded, in one transaction.
    private static func apply(
        _ pending: [Migration],
        on db: any Database,
        clock: ContinuousClock
    ) async throws -> Report {
        try await db.transaction { transaction -> Report in
            if transaction.dialect == .postgres {
                // Waiting for another instance's migrations, or a migration rewriting a large
                // table, may take longer than the statement timeout meant for requests.
                try await transaction.execute("SET LOCAL statement_timeout = 0", [])
                try await transaction.execute("SELECT pg_advisory_xact_lock($1)", [.integer(advisoryLockKey)])
            }
            try await transaction.execute(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version BIGINT PRIMARY KEY,
                    name TEXT NOT NULL,
                    applied_at BIGINT NOT NULL
                )
                """,
                []
            )
            var recorded: [Int64: String] = [:]
            for row in try await transaction.query("SELECT version, name FROM schema_migrations", []) {
                recorded[try row.int("version")] = try row.string("name")
            }
            var report = Report()
            let known = Set(pending.map { Int64($0.version) })
            report.unknown = recorded.keys.filter { !known.contains($0) }.sorted()
            for migration in pending {
                if let name = recorded[Int64(migration.version)] {
                    if name != migration.name { report.renamed.append((migration, name)) }
                    continue
                }
                let migrationStart = clock.now
                do {
                    try await transaction.executeScript(migration.sql(for: transaction.dialect))
                } catch {
                    let inner = error as? DatabaseError
                    throw DatabaseError(
                        code: .migrationFailed,
                        message: "migration \(migration.version) (\(migration.name)) failed on "
                            + "\(transaction.dialect): \(inner?.message ?? "\(error)"); no migration was applied",
                        sqlState: inner?.sqlState,
                        constraint: inner?.constraint,
                        detail: inner?.detail
                    )
                }
                try await transaction.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
                    [.integer(Int64(migration.version)), .text(migration.name), SQLValue(Date())]
                )
                report.applied.append((migration, clock.now - migrationStart))
            }
            return report
        }
    }

    private static func log(
        _ report: Report,
        dialect: SQLDialect,
        latest: Int,
        since start: ContinuousClock.Instant,
        clock: ContinuousClock,
        logger: Logger
    ) {
        for (migration, duration) in report.applied {
            logger.notice(
                "applied migration",
                metadata: [
                    "version": .int(migration.version), "name": .string(migration.name),
                    "duration_ms": .int(milliseconds(duration)), "dialect": .string(dialect.rawValue),
                ]
            )
        }
        for (migration, recordedName) in report.renamed {
            logger.warning(
                "migration recorded under another name",
                metadata: [
                    "version": .int(migration.version), "name": .string(migration.name),
                    "recorded_name": .string(recordedName),
                ]
            )
        }
        if !report.unknown.isEmpty {
            logger.warning(
                "database has migrations this build does not know; is a newer Herald sharing it?",
                metadata: ["versions": .string(report.unknown.map(String.init).joined(separator: ","))]
            )
        }
        logger.info(
            report.applied.isEmpty ? "database schema up to date" : "database schema migrated",
            metadata: [
                "applied": .int(report.applied.count), "latest": .int(latest),
                "duration_ms": .int(milliseconds(clock.now - start)),
            ]
        )
    }

    /// What one run did; returned from the transaction body.
    private struct Report: Sendable {
        var applied: [(Migration, Duration)] = []
        var renamed: [(Migration, String)] = []
        var unknown: [Int64] = []
    }

    private static func validate(_ migrations: [Migration]) throws {
        var seen = Set<Int>()
        for migration in migrations {
            guard migration.version > 0 else {
                throw DatabaseError(
                    code: .migrationFailed,
                    message: "migration '\(migration.name)' has version \(migration.version); versions start at 1"
                )
            }
            guard seen.insert(migration.version).inserted else {
                throw DatabaseError(
                    code: .migrationFailed,
                    message: "two migrations have version \(migration.version); give each a unique version"
                )
            }
            guard !migration.name.isEmpty else {
                throw DatabaseError(code: .migrationFailed, message: "migration \(migration.version) has no name")
            }
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }
}
