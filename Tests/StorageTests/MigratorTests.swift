import AsyncTestSupport
import DatabaseTestSupport
import Foundation
import HeraldCore
import Storage
import Testing

@Suite("Migrator")
struct MigratorTests {
    /// Migrations that fail if run twice (plain CREATE TABLE), with per-dialect SQL and scripts.
    static let migrations: [Migration] = [
        Migration(
            module: "Widgets",
            number: 1,
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
            module: "Widgets",
            number: 2,
            name: "add_widget_color",
            sql: "ALTER TABLE widgets ADD COLUMN color TEXT; INSERT INTO widgets (name) VALUES ('seed')"
        ),
    ]

    /// `herald_migrations` as "module number", in the order they were recorded.
    static func recordedVersions(_ db: any Database) async throws -> [String] {
        try await db.query("SELECT module, number FROM herald_migrations ORDER BY applied_at, module, number", [])
            .map { "\(try $0.string("module")) \(try $0.int("number"))" }
    }

    @Test("migrations are applied once, in order, recorded and logged at notice", arguments: Backend.allCases)
    func appliedOnce(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            let log = RecordingLogHandler()
            // Out of order on purpose: the migrator sorts a module's by number.
            try await Migrator.migrate(db, Self.migrations.reversed(), logger: makeLogger(log))
            #expect(try await Self.recordedVersions(db) == ["Widgets 1", "Widgets 2"])
            let rows = try await db.query(
                "SELECT number, name, applied_at FROM herald_migrations ORDER BY number",
                []
            )
            #expect(try rows.map { try $0.string("name") } == ["create_widgets", "add_widget_color"])
            #expect(try rows.allSatisfy { try $0.int("applied_at") > 1_600_000_000_000 })
            let notices = log.messages(at: .notice).filter { $0.message == "applied migration" }
            #expect(notices.count == 2)
            #expect(
                notices.first?.metadata.contains { $0.key == "migration" && $0.value == .string("Widgets 1") } == true
            )

            // Running again changes nothing (the seed row would be inserted twice otherwise).
            let again = RecordingLogHandler()
            try await Migrator.migrate(db, Self.migrations, logger: makeLogger(again))
            #expect(again.messages(at: .notice).isEmpty)
            #expect(try await db.query("SELECT count(*) AS n FROM widgets", [])[0].int("n") == 1)

            // A later build adds a migration: only that one runs.
            let third = Migration(
                module: "Gadgets",
                number: 1,
                name: "create_gadgets",
                sql: "CREATE TABLE gadgets (id BIGINT)"
            )
            // Its applied_at is the time of day of the clock it is given.
            let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
            try await Migrator.migrate(db, Self.migrations + [third], logger: makeLogger(), stamps: clock)
            #expect(try await Self.recordedVersions(db).sorted() == ["Gadgets 1", "Widgets 1", "Widgets 2"])
            let stamped = try await db.query("SELECT applied_at FROM herald_migrations WHERE module = 'Gadgets'", [])
            #expect(try stamped.map { try $0.int("applied_at") } == [1_800_000_000_000])
        }
    }

    @Test("Storage's own migrations apply on both dialects", arguments: Backend.allCases)
    func storageMigrations(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            try await Migrator.migrate(db, StorageMigrations.all, logger: makeLogger())
            #expect(try await Self.recordedVersions(db) == StorageMigrations.all.map(\.id.description))
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
            #expect(try await Self.recordedVersions(db) == ["Widgets 1", "Widgets 2"])
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
            #expect(try await Self.recordedVersions(db) == ["Widgets 1", "Widgets 2"])
        }
    }

    @Test("a failing migration applies nothing and names itself", arguments: Backend.allCases)
    func failingMigration(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            let broken = Migration(
                module: "Widgets",
                number: 3,
                name: "broken",
                sql: "CREATE TABLE widgets (id BIGINT)"
            )
            let error = await expectDatabaseError {
                try await Migrator.migrate(db, Self.migrations + [broken], logger: makeLogger())
            }
            #expect(error?.code == .migrationFailed)
            #expect(error?.message.contains("migration Widgets 3 (broken)") == true)
            // Nothing was kept: migrations 1 and 2 apply cleanly now.
            try await Migrator.migrate(db, Self.migrations, logger: makeLogger())
            #expect(try await Self.recordedVersions(db) == ["Widgets 1", "Widgets 2"])
        }
    }

    @Test("invalid migration lists are refused before touching the database")
    func invalidLists() async throws {
        try await withDatabase(.sqliteMemory) { db, _ in
            let duplicate = await expectDatabaseError {
                try await Migrator.migrate(
                    db,
                    [
                        Migration(module: "Widgets", number: 1, name: "a", sql: "SELECT 1"),
                        Migration(module: "Widgets", number: 1, name: "b", sql: "SELECT 1"),
                    ],
                    logger: makeLogger()
                )
            }
            #expect(duplicate?.code == .migrationFailed)
            let zero = await expectDatabaseError {
                try await Migrator.migrate(
                    db,
                    [Migration(module: "Widgets", number: 0, name: "a", sql: "SELECT 1")],
                    logger: makeLogger()
                )
            }
            #expect(zero?.code == .migrationFailed)
            let releasedTwice = await expectDatabaseError {
                try await Migrator.migrate(
                    db,
                    [
                        Migration(module: "Widgets", number: 1, name: "a", releasedAs: 4, sql: "SELECT 1"),
                        Migration(module: "Gadgets", number: 1, name: "b", releasedAs: 4, sql: "SELECT 1"),
                    ],
                    logger: makeLogger()
                )
            }
            #expect(releasedTwice?.message.contains("were both released as version 4") == true)
            // A migration written since the global sequence cannot come before a released one.
            let backwards = await expectDatabaseError {
                try await Migrator.migrate(
                    db,
                    [
                        Migration(module: "Widgets", number: 1, name: "a", sql: "SELECT 1"),
                        Migration(module: "Widgets", number: 2, name: "b", releasedAs: 4, sql: "SELECT 1"),
                    ],
                    logger: makeLogger()
                )
            }
            #expect(backwards?.message.contains("Widgets 1 (a) would apply before Widgets 2 (b)") == true)
            let tables = try await db.query("SELECT name FROM sqlite_master WHERE name = 'herald_migrations'", [])
            #expect(tables.isEmpty)
        }
    }

    @Test(
        "released migrations apply in their global order, later ones module by module in list order",
        arguments: [Backend.sqliteMemory]
    )
    func order(backend: Backend) throws {
        let list = [
            Migration(module: "B", number: 1, name: "b1", releasedAs: 2, sql: "SELECT 1"),
            Migration(module: "B", number: 2, name: "b2", sql: "SELECT 1"),
            Migration(module: "A", number: 1, name: "a1", releasedAs: 1, sql: "SELECT 1"),
            Migration(module: "A", number: 2, name: "a2", releasedAs: 3, sql: "SELECT 1"),
            Migration(module: "A", number: 3, name: "a3", sql: "SELECT 1"),
            Migration(module: "C", number: 1, name: "c1", sql: "SELECT 1"),
        ]
        #expect(try Migrator.ordered(list).map(\.id.description) == ["A 1", "B 1", "A 2", "B 2", "A 3", "C 1"])
    }

    @Test(
        "a database the global sequence recorded is read into herald_migrations once, nothing applied again",
        arguments: Backend.allCases
    )
    func adoptsTheReleasedRecord(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            // What a release of the one global sequence left: its table, and its record of
            // versions 1 and 2 (under the first one's old name), plus one this build never had.
            try await db.executeScript(
                """
                CREATE TABLE widgets (id BIGINT, name TEXT, color TEXT);
                CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL);
                INSERT INTO schema_migrations VALUES (1, 'create_widget_table', 1700000000000);
                INSERT INTO schema_migrations VALUES (2, 'add_widget_color', 1700000000001);
                INSERT INTO schema_migrations VALUES (7, 'from_the_future', 1700000000002);
                """
            )
            let released = [
                Migration(
                    module: "Widgets",
                    number: 1,
                    name: "create_widgets",
                    releasedAs: 1,
                    sql: "CREATE TABLE widgets (id BIGINT)"
                ),
                Migration(
                    module: "Widgets",
                    number: 2,
                    name: "add_widget_color",
                    releasedAs: 2,
                    sql: "ALTER TABLE widgets ADD COLUMN color TEXT"
                ),
                Migration(
                    module: "Widgets",
                    number: 3,
                    name: "create_gadgets",
                    sql: "CREATE TABLE gadgets (id BIGINT)"
                ),
            ]
            let log = RecordingLogHandler()
            try await Migrator.migrate(db, released, logger: makeLogger(log))
            let rows = try await db.query(
                "SELECT module, number, name, applied_at FROM herald_migrations ORDER BY number",
                []
            )
            #expect(
                try rows.map { "\(try $0.string("module")) \(try $0.int("number")) \(try $0.string("name"))" } == [
                    "Widgets 1 create_widget_table", "Widgets 2 add_widget_color", "Widgets 3 create_gadgets",
                ]
            )
            #expect(try rows.prefix(2).map { try $0.int("applied_at") } == [1_700_000_000_000, 1_700_000_000_001])
            let applied = log.messages(at: .notice).filter { $0.message == "applied migration" }
            #expect(applied.count == 1)
            let warnings = log.messages(at: .warning).map(\.message)
            #expect(warnings.contains("migration recorded under another name"))
            #expect(warnings.contains { $0.hasPrefix("schema_migrations records versions this build does not know") })
            // The old record stays as it was; a second run reads only herald_migrations.
            #expect(try await db.query("SELECT count(*) AS n FROM schema_migrations", [])[0].int("n") == 3)
            let again = RecordingLogHandler()
            try await Migrator.migrate(db, released, logger: makeLogger(again))
            #expect(again.messages(at: .notice).isEmpty)
        }
    }
}
