import AsyncTestSupport
import DatabaseTestSupport
import HeraldCore
import Storage
import Testing

@Suite("Migrator")
struct MigratorTests {
    /// Migrations that fail if run twice (plain CREATE TABLE), with per-dialect SQL and scripts.
    static let migrations: [Migration] = [
        Migration(
            version: 1,
            name: "create_widgets",
            sqlite: """
                CREATE TABLE widgets (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
                CREATE INDEX widgets_name ON widgets (name);
                """,
            postgres: """
                CREATE TABLE widgets (id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL);
                CREATE INDEX widgets_name ON widgets (name);
                """
        ),
        Migration(
            version: 2,
            name: "add_widget_color",
            sql: "ALTER TABLE widgets ADD COLUMN color TEXT; INSERT INTO widgets (name) VALUES ('seed')"
        ),
    ]

    static func recordedVersions(_ db: any Database) async throws -> [Int64] {
        try await db.query("SELECT version FROM schema_migrations ORDER BY version", []).map { try $0.int("version") }
    }

    @Test("migrations are applied once, in order, recorded and logged at notice", arguments: Backend.allCases)
    func appliedOnce(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            let log = RecordingLogHandler()
            // Out of order on purpose: the migrator sorts by version.
            try await Migrator.migrate(db, Self.migrations.reversed(), logger: makeLogger(log))
            #expect(try await Self.recordedVersions(db) == [1, 2])
            let rows = try await db.query(
                "SELECT version, name, applied_at FROM schema_migrations ORDER BY version",
                []
            )
            #expect(try rows.map { try $0.string("name") } == ["create_widgets", "add_widget_color"])
            #expect(try rows.allSatisfy { try $0.int("applied_at") > 1_600_000_000_000 })
            let notices = log.messages(at: .notice).filter { $0.message == "applied migration" }
            #expect(notices.count == 2)
            #expect(notices.first?.metadata.contains { $0.key == "version" && $0.value == .int(1) } == true)

            // Running again changes nothing (the seed row would be inserted twice otherwise).
            let again = RecordingLogHandler()
            try await Migrator.migrate(db, Self.migrations, logger: makeLogger(again))
            #expect(again.messages(at: .notice).isEmpty)
            #expect(try await db.query("SELECT count(*) AS n FROM widgets", [])[0].int("n") == 1)

            // A later build adds a migration: only that one runs.
            let third = Migration(version: 3, name: "create_gadgets", sql: "CREATE TABLE gadgets (id BIGINT)")
            try await Migrator.migrate(db, Self.migrations + [third], logger: makeLogger())
            #expect(try await Self.recordedVersions(db) == [1, 2, 3])
        }
    }

    @Test("Storage's own migrations apply on both dialects", arguments: Backend.allCases)
    func storageMigrations(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            try await Migrator.migrate(db, StorageMigrations.all, logger: makeLogger())
            #expect(try await Self.recordedVersions(db) == StorageMigrations.all.map { Int64($0.version) })
            try await db.execute(
                "INSERT INTO kv_settings (key, value, updated_at) VALUES ($1, $2, $3)",
                ["greeting", "hello", 1]
            )
            let duplicate = await expectDatabaseError {
                try await db.execute(
                    "INSERT INTO kv_settings (key, value, updated_at) VALUES ($1, $2, $3)",
                    ["greeting", "again", 2]
                )
            }
            #expect(duplicate?.isUniqueViolation == true)
        }
    }

    @Test(
        "two migrators racing on one database both succeed and apply each migration once",
        arguments: Backend.allCases
    )
    func racingMigrators(backend: Backend) async throws {
        try await withDatabase(backend) { db, test in
            // Two instances: a second connection to the same database (memory databases are
            // private to their connection, so there both migrators share the one database).
            let other = backend == .sqliteMemory ? db : try await test.open()
            let firstLog = RecordingLogHandler()
            let secondLog = RecordingLogHandler()
            async let first: Void = Migrator.migrate(db, Self.migrations, logger: makeLogger(firstLog))
            async let second: Void = Migrator.migrate(other, Self.migrations, logger: makeLogger(secondLog))
            _ = try await (first, second)
            if backend != .sqliteMemory { await other.close() }
            #expect(try await Self.recordedVersions(db) == [1, 2])
            #expect(try await db.query("SELECT count(*) AS n FROM widgets", [])[0].int("n") == 1)
            let applied = (firstLog.all + secondLog.all).filter { $0.message == "applied migration" }
            #expect(applied.count == 2)
        }
    }

    @Test("on SQLite, a migrator keeps waiting while another process holds the write lock past the busy timeout")
    func waitsForTheWriteLock() async throws {
        try await withDatabase(.sqliteFile) { db, test in
            let holder = try await test.open()
            let held = Latch()
            let release = Latch()
            defer { release.open() }
            let log = RecordingLogHandler()
            async let holding: Void = holder.transaction { transaction in
                try await transaction.execute("CREATE TABLE lock_holder (id INTEGER)", [])
                held.open()
                try await release.wait()
            }
            try await held.wait()
            async let migrating: Void = Migrator.migrate(db, Self.migrations, logger: makeLogger(log))
            try await eventually(
                "the migrator to report that it waits",
                timeout: .seconds(60),
                pollingEvery: .milliseconds(50)
            ) {
                log.messages(at: .info).contains { $0.message.hasPrefix("waiting for another process") }
            }
            release.open()
            _ = try await (holding, migrating)
            await holder.close()
            #expect(try await Self.recordedVersions(db) == [1, 2])
        }
    }

    @Test("a failing migration applies nothing and names itself", arguments: Backend.allCases)
    func failingMigration(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            let broken = Migration(version: 3, name: "broken", sql: "CREATE TABLE widgets (id BIGINT)")
            let error = await expectDatabaseError {
                try await Migrator.migrate(db, Self.migrations + [broken], logger: makeLogger())
            }
            #expect(error?.code == .migrationFailed)
            #expect(error?.message.contains("migration 3 (broken)") == true)
            // Nothing was kept: migrations 1 and 2 apply cleanly now.
            try await Migrator.migrate(db, Self.migrations, logger: makeLogger())
            #expect(try await Self.recordedVersions(db) == [1, 2])
        }
    }

    @Test("invalid migration lists are refused before touching the database")
    func invalidLists() async throws {
        try await withDatabase(.sqliteMemory) { db, _ in
            let duplicate = await expectDatabaseError {
                try await Migrator.migrate(
                    db,
                    [
                        Migration(version: 1, name: "a", sql: "SELECT 1"),
                        Migration(version: 1, name: "b", sql: "SELECT 1"),
                    ],
                    logger: makeLogger()
                )
            }
            #expect(duplicate?.code == .migrationFailed)
            let zero = await expectDatabaseError {
                try await Migrator.migrate(
                    db,
                    [Migration(version: 0, name: "a", sql: "SELECT 1")],
                    logger: makeLogger()
                )
            }
            #expect(zero?.code == .migrationFailed)
            let tables = try await db.query("SELECT name FROM sqlite_master WHERE name = 'schema_migrations'", [])
            #expect(tables.isEmpty)
        }
    }
}
