import APNs
import DatabaseTestSupport
import Devices
import Foundation
import Storage
import Testing

/// The `all` audience's pages must be read in index order whatever PostgreSQL's statistics say:
/// a sort of the whole remaining registry per page makes a large send quadratic.
@Suite("Devices: the all audience's page plan does not depend on statistics (PostgreSQL)")
struct AudiencePlanTests {
    static let app = "com.example.plan"

    /// Imports `count` active devices from `first` in one statement, as a bulk import leaves them.
    static func importDevices(_ database: any Database, from first: Int, count: Int) async throws {
        try await database.execute(
            """
            INSERT INTO devices (app, environment, token, tags, status, created_at, updated_at)
            SELECT $1, 'production', lpad(to_hex(g), 64, '0'), '[]', 'active', 0, 0
            FROM generate_series($2::bigint, $3::bigint) AS g
            """,
            [.text(app), SQLValue(first), SQLValue(first + count - 1)]
        )
    }

    /// The plan of the page query after `cursor`, as `EXPLAIN` prints it.
    static func plan(_ database: any Database, after cursor: AudienceCursor?) async throws -> String {
        let (sql, binds) = DeviceStore.allPageQuery(app: app, environment: .production, after: cursor, limit: 1_000)
        return try await database.query("EXPLAIN " + sql, binds).map { try $0.string("QUERY PLAN") }
            .joined(separator: "\n")
    }

    static func expectIndexOrder(_ database: any Database) async throws {
        let middle = try #require(AudienceCursor(text: String(repeating: "0", count: 60) + "2710"))
        for cursor in [nil, middle] {
            let plan = try await plan(database, after: cursor)
            #expect(plan.contains("devices_active"), "\(plan)")
            #expect(!plan.contains("Sort"), "\(plan)")
            #expect(!plan.contains("Seq Scan"), "\(plan)")
        }
    }

    @Test("a freshly imported registry, never analyzed, is paged by devices_active")
    func neverAnalyzed() async throws {
        try await withDatabase(.postgres) { database, _ in
            try await Migrator.migrate(database, DeviceMigrations.all, logger: TestDatabase.quiet)
            // Autovacuum would analyze the table at a time of its choosing: not during this test.
            try await database.execute("ALTER TABLE devices SET (autovacuum_enabled = false)", [])
            try await Self.importDevices(database, from: 1, count: 20_000)
            let analyzed = try await database.queryFirst(
                "SELECT reltuples FROM pg_class WHERE relname = 'devices'",
                []
            )
            #expect(try #require(analyzed).double("reltuples") < 0, "the table has never been analyzed")
            try await Self.expectIndexOrder(database)
        }
    }

    @Test("a registry analyzed when it held only invalid devices, then imported, is paged by devices_active")
    func analyzedBeforeImport() async throws {
        try await withDatabase(.postgres) { database, _ in
            try await Migrator.migrate(database, DeviceMigrations.all, logger: TestDatabase.quiet)
            try await database.execute("ALTER TABLE devices SET (autovacuum_enabled = false)", [])
            try await database.execute(
                """
                INSERT INTO devices (app, environment, token, tags, status, created_at, updated_at)
                SELECT $1, 'production', 'f' || lpad(to_hex(g), 63, '0'), '[]', 'invalid', 0, 0
                FROM generate_series(1, 2000) AS g
                """,
                [.text(Self.app)]
            )
            // The statistics say no device is active.
            try await database.execute("ANALYZE devices", [])
            try await Self.importDevices(database, from: 1, count: 20_000)
            try await Self.expectIndexOrder(database)
        }
    }
}
