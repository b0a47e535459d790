import Foundation
public import HeraldCore

/// Applies the modules' ``Migration``s at start-up.
///
/// All pending migrations run in one transaction, recorded in
/// `herald_migrations(module, number, name, applied_at)`, so a failure leaves the schema as it
/// was. Safe when several instances start at once: on PostgreSQL the transaction first takes
/// `pg_advisory_xact_lock(`` advisoryLockKey ``)` and only then reads which migrations are
/// applied; on SQLite the transaction is `BEGIN IMMEDIATE`, which holds the write lock from the
/// start, and a migrator that finds the lock held past the busy timeout tries again for up to
/// ``lockWait``, as PostgreSQL's advisory lock waits without a statement timeout.
///
/// Order: the migrations released in the one global sequence first, by that version (their
/// history), then the later ones module by module in the order the list first names each module,
/// each module's by number, so a module's migrations may use the tables of the modules listed
/// before it. A database recorded by those earlier releases (`schema_migrations(version, name,
/// applied_at)`) is read once into `herald_migrations` through ``Migration/releasedAs``; the old
/// table is left as it was.
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
    /// - Parameter stamps: the clock whose time of day each migration's `applied_at` records.
    /// - Throws: ``DatabaseError`` with ``DatabaseError/Code/migrationFailed`` when the list is
    ///   invalid or a migration's SQL fails (its message names the migration).
    public static func migrate(
        _ db: any Database,
        _ migrations: [Migration],
        logger: Logger,
        stamps: any HeraldClock = SystemClock()
    ) async throws {
        let pending = try ordered(migrations)
        let clock = ContinuousClock()
        let start = clock.now
        let report = try await waitingForTheLock(db, logger: logger, clock: clock) {
            try await apply(pending, on: db, clock: clock, stamps: stamps)
        }
        log(report, dialect: db.dialect, known: pending.count, since: start, clock: clock, logger: logger)
    }

    /// `migrations` validated and in the order they apply: released ones by their global version,
    /// then module by module (in the order the list first names each) by number.
    ///
    /// - Throws: ``DatabaseError`` with ``DatabaseError/Code/migrationFailed`` naming what to fix.
    public static func ordered(_ migrations: [Migration]) throws -> [Migration] {
        var moduleIndex: [String: Int] = [:]
        for migration in migrations where moduleIndex[migration.module] == nil {
            moduleIndex[migration.module] = moduleIndex.count
        }
        try validate(migrations)
        let ordered = migrations.sorted { a, b in
            let left = (a.releasedAs ?? Int.max, moduleIndex[a.module] ?? 0, a.number)
            let right = (b.releasedAs ?? Int.max, moduleIndex[b.module] ?? 0, b.number)
            return left < right
        }
        // A module's migrations apply in the order of their numbers, released or not.
        var last: [String: Migration] = [:]
        for migration in ordered {
            if let previous = last[migration.module], previous.number > migration.number {
                throw DatabaseError(
                    code: .migrationFailed,
                    message: "migration \(migration.id) (\(migration.name)) would apply before \(previous.id) "
                        + "(\(previous.name)); a migration written since the one global sequence takes a number "
                        + "after every released one of its module"
                )
            }
            last[migration.module] = migration
        }
        return ordered
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
        clock: ContinuousClock,
        stamps: any HeraldClock
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
                CREATE TABLE IF NOT EXISTS herald_migrations (
                    module TEXT NOT NULL,
                    number BIGINT NOT NULL,
                    name TEXT NOT NULL,
                    applied_at BIGINT NOT NULL,
                    PRIMARY KEY (module, number)
                )
                """,
                []
            )
            var report = Report()
            var recorded: [Migration.ID: String] = [:]
            let rows = try await transaction.query("SELECT module, number, name FROM herald_migrations", [])
            for row in rows {
                let id = Migration.ID(module: try row.string("module"), number: Int(try row.int("number")))
                recorded[id] = try row.string("name")
            }
            if recorded.isEmpty {
                report.unknownReleased = try await adoptReleased(pending, into: &recorded, on: transaction)
            }
            let known = Set(pending.map(\.id))
            report.unknown = recorded.keys.filter { !known.contains($0) }.map(\.description).sorted()
            for migration in pending {
                if let name = recorded[migration.id] {
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
                        message: "migration \(migration.id) (\(migration.name)) failed on "
                            + "\(transaction.dialect): \(inner?.message ?? "\(error)"); no migration was applied",
                        sqlState: inner?.sqlState,
                        constraint: inner?.constraint,
                        detail: inner?.detail
                    )
                }
                try await record(migration.id, name: migration.name, at: SQLValue(stamps.now()), on: transaction)
                report.applied.append((migration, clock.now - migrationStart))
            }
            return report
        }
    }

    /// Reads what the releases of the one global sequence recorded in `schema_migrations`, if
    /// the database has that table, into `herald_migrations`; returns the versions no migration
    /// of `migrations` was released as.
    private static func adoptReleased(
        _ migrations: [Migration],
        into recorded: inout [Migration.ID: String],
        on transaction: any DatabaseExecutor
    ) async throws -> [Int64] {
        let exists =
            switch transaction.dialect {
            case .sqlite:
                "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
            case .postgres:
                """
                SELECT count(*) AS n FROM information_schema.tables
                WHERE table_schema = current_schema() AND table_name = 'schema_migrations'
                """
            }
        guard try await transaction.query(exists, []).first?.int("n") ?? 0 > 0 else { return [] }
        var released: [Int64: Migration] = [:]
        for migration in migrations {
            if let version = migration.releasedAs { released[Int64(version)] = migration }
        }
        var unknown: [Int64] = []
        let rows = try await transaction.query(
            "SELECT version, name, applied_at FROM schema_migrations ORDER BY version",
            []
        )
        for row in rows {
            let version = try row.int("version")
            guard let migration = released[version] else {
                unknown.append(version)
                continue
            }
            let name = try row.string("name")
            try await record(migration.id, name: name, at: .integer(try row.int("applied_at")), on: transaction)
            recorded[migration.id] = name
        }
        return unknown
    }

    private static func record(
        _ id: Migration.ID,
        name: String,
        at appliedAt: SQLValue,
        on transaction: any DatabaseExecutor
    ) async throws {
        try await transaction.execute(
            "INSERT INTO herald_migrations (module, number, name, applied_at) VALUES ($1, $2, $3, $4)",
            [.text(id.module), .integer(Int64(id.number)), .text(name), appliedAt]
        )
    }

    private static func log(
        _ report: Report,
        dialect: SQLDialect,
        known: Int,
        since start: ContinuousClock.Instant,
        clock: ContinuousClock,
        logger: Logger
    ) {
        for (migration, duration) in report.applied {
            logger.notice(
                "applied migration",
                metadata: [
                    "migration": .string(migration.id.description), "name": .string(migration.name),
                    "duration_ms": .int(milliseconds(duration)), "dialect": .string(dialect.rawValue),
                ]
            )
        }
        for (migration, recordedName) in report.renamed {
            logger.warning(
                "migration recorded under another name",
                metadata: [
                    "migration": .string(migration.id.description), "name": .string(migration.name),
                    "recorded_name": .string(recordedName),
                ]
            )
        }
        if !report.unknown.isEmpty {
            logger.warning(
                "database has migrations this build does not know; is a newer Herald sharing it?",
                metadata: ["migrations": .string(report.unknown.joined(separator: ","))]
            )
        }
        if !report.unknownReleased.isEmpty {
            logger.warning(
                "schema_migrations records versions this build does not know; is a newer Herald sharing it?",
                metadata: ["versions": .string(report.unknownReleased.map(String.init).joined(separator: ","))]
            )
        }
        logger.info(
            report.applied.isEmpty ? "database schema up to date" : "database schema migrated",
            metadata: [
                "applied": .int(report.applied.count), "migrations": .int(known),
                "duration_ms": .int(milliseconds(clock.now - start)),
            ]
        )
    }

    /// What one run did; returned from the transaction body.
    private struct Report: Sendable {
        var applied: [(Migration, Duration)] = []
        var renamed: [(Migration, String)] = []
        var unknown: [String] = []
        var unknownReleased: [Int64] = []
    }

    private static func validate(_ migrations: [Migration]) throws {
        var seen = Set<Migration.ID>()
        var released: [Int: Migration] = [:]
        for migration in migrations {
            guard !migration.module.isEmpty else {
                throw DatabaseError(
                    code: .migrationFailed,
                    message: "migration '\(migration.name)' names no module; give it the module that owns its tables"
                )
            }
            guard migration.number > 0 else {
                throw DatabaseError(
                    code: .migrationFailed,
                    message: "migration '\(migration.name)' has number \(migration.number) in \(migration.module); "
                        + "numbers start at 1"
                )
            }
            guard seen.insert(migration.id).inserted else {
                throw DatabaseError(
                    code: .migrationFailed,
                    message: "two migrations are \(migration.id); give each a unique number in its module"
                )
            }
            guard !migration.name.isEmpty else {
                throw DatabaseError(code: .migrationFailed, message: "migration \(migration.id) has no name")
            }
            if let version = migration.releasedAs {
                if let other = released.updateValue(migration, forKey: version) {
                    throw DatabaseError(
                        code: .migrationFailed,
                        message: "\(other.id) and \(migration.id) were both released as version \(version)"
                    )
                }
            }
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }
}
