import DatabaseTestSupport
import HeraldAPI
import Storage
import Testing

/// Each module owns its migrations; the executable composes them. The single list of before
/// (``LegacySchema``) is frozen: the composed list holds it unchanged, and later migrations only
/// append versions after it. A database made by the single list gets just those later ones, and a
/// new database the same schema and recorded versions as the single list plus them.
@Suite("schema composition")
struct SchemaCompositionTests {
    /// The migrations added since the single list, by version.
    static var added: [Migration] {
        let legacy = Set(LegacySchema.migrations.map(\.version))
        return HeraldSchema.migrations.filter { !legacy.contains($0.version) }.sorted { $0.version < $1.version }
    }

    @Test("the executable composes every module's migrations in one fixed order, none left out")
    func compositionOrder() {
        // Module by module, in the order `HeraldSchema` appends their lists, then the features'.
        let expected = [
            "1 create_kv_settings",  // Storage
            "2 create_jobs",  // Jobs
            "5 create_idempotency_keys",  // HeraldAPI
            "11 create_live_activities", "12 create_live_activity_deliveries",
            "16 live_activity_instances_registered_after", "17 live_activities_starting",
            "18 live_activity_users_from_push_to_start", "19 push_to_start_tokens_user_registered",  // LiveActivities
            "7 create_devices", "21 devices_active",  // the Devices feature (HeraldFeatures.all)
            "9 create_webhooks", "10 create_webhook_outbox",  // the Webhooks feature
            "3 create_notifications", "4 notification_send_owner", "6 notifications_listing",
            "8 notification_audiences", "15 notification_pages", "20 notification_counts",  // the Notifications feature
            "13 create_wake_schedules", "14 create_wake_runs_and_pings",  // the Wake feature
        ]
        #expect(HeraldSchema.migrations.map { "\($0.version) \($0.name)" } == expected)
    }

    @Test("the modules' migrations are the single list of before (versions, names and SQL), then later versions")
    func modulesComposeTheLegacyList() {
        let byVersion = HeraldSchema.migrations.sorted { $0.version < $1.version }
        let legacy = LegacySchema.migrations
        #expect(Array(byVersion.prefix(legacy.count)).map(\.version) == legacy.map(\.version))
        #expect(Array(byVersion.prefix(legacy.count)).map(\.name) == legacy.map(\.name))
        #expect(Array(byVersion.prefix(legacy.count)) == legacy)
        let latest = legacy.map(\.version).max() ?? 0
        #expect(Self.added.allSatisfy { $0.version > latest })
        #expect(
            Self.added.map(\.name) == [
                "notifications_listing", "create_devices", "notification_audiences", "create_webhooks",
                "create_webhook_outbox", "create_live_activities", "create_live_activity_deliveries",
                "create_wake_schedules", "create_wake_runs_and_pings", "notification_pages",
                "live_activity_instances_registered_after", "live_activities_starting",
                "live_activity_users_from_push_to_start", "push_to_start_tokens_user_registered",
                "notification_counts", "devices_active",
            ]
        )
    }

    @Test(
        "herald gives a new database the versions and schema the single list gave",
        arguments: [Backend.sqliteFile, .postgres]
    )
    func newDatabase(backend: Backend) async throws {
        let byHerald = try await TestDatabase.make(backend)
        let byLegacy = try await TestDatabase.make(backend)
        do {
            // `herald jobs` opens only a database that exists: an empty SQLite file is one.
            await (try await byHerald.open()).close()
            let run = try await JobsCommandTests.herald(["jobs", "stats", "--database-url", byHerald.url])
            #expect(run.status == 0, "herald jobs stats: \(run.error)")

            let legacy = try await byLegacy.open()
            try await Migrator.migrate(legacy, LegacySchema.migrations, logger: TestDatabase.quiet)
            try await Migrator.migrate(legacy, LegacySchema.migrations + Self.added, logger: TestDatabase.quiet)
            let expectedVersions = try await Self.recorded(legacy).map(\.version)
            let expectedSchema = try await Self.schema(legacy)
            await legacy.close()

            let migrated = try await byHerald.open()
            let recorded = try await Self.recorded(migrated)
            #expect(recorded.map(\.version) == expectedVersions)
            #expect(
                recorded.map(\.version)
                    == (LegacySchema.migrations + Self.added).map { "\($0.version) \($0.name)" }
            )
            let schema = try await Self.schema(migrated)
            #expect(!schema.isEmpty)
            #expect(schema == expectedSchema)
            await migrated.close()
        } catch {
            await byHerald.remove()
            await byLegacy.remove()
            throw error
        }
        await byHerald.remove()
        await byLegacy.remove()
    }

    @Test(
        "herald finds a database the single list migrated: only the later versions applied, nothing renamed or unknown",
        arguments: [Backend.sqliteFile, .postgres]
    )
    func existingDatabase(backend: Backend) async throws {
        try await withDatabase(backend) { db, test in
            try await Migrator.migrate(db, LegacySchema.migrations, logger: TestDatabase.quiet)
            let before = try await Self.recorded(db)

            let run = try await JobsCommandTests.herald(["jobs", "stats", "--database-url", test.url])
            #expect(run.status == 0, "herald jobs stats: \(run.error)")
            // herald jobs logs warnings: a renamed or unknown migration would show here.
            #expect(!run.error.contains("recorded under another name"), "stderr: \(run.error)")
            #expect(!run.error.contains("does not know"), "stderr: \(run.error)")
            let after = try await Self.recorded(db)
            #expect(Array(after.prefix(before.count)) == before, "no migration was applied again")
            #expect(after.dropFirst(before.count).map(\.version) == Self.added.map { "\($0.version) \($0.name)" })

            let expected = try await TestDatabase.make(backend)
            do {
                let reference = try await expected.open()
                try await Migrator.migrate(reference, LegacySchema.migrations + Self.added, logger: TestDatabase.quiet)
                #expect(try await Self.schema(db) == (try await Self.schema(reference)))
                await reference.close()
            } catch {
                await expected.remove()
                throw error
            }
            await expected.remove()
        }
    }

    // MARK: Reading a database's schema

    /// `schema_migrations` as "version name" and when each was applied, by version.
    static func recorded(_ db: any Database) async throws -> [Recorded] {
        let rows = try await db.query("SELECT version, name, applied_at FROM schema_migrations ORDER BY version", [])
        return try rows.map {
            Recorded(version: "\(try $0.int("version")) \(try $0.string("name"))", appliedAt: try $0.int("applied_at"))
        }
    }

    struct Recorded: Equatable {
        var version: String
        var appliedAt: Int64
    }

    /// Every table, column, index and constraint, one line each, in a stable order.
    static func schema(_ db: any Database) async throws -> [String] {
        let queries: [String]
        switch db.dialect {
        case .sqlite:
            queries = [
                "SELECT type || ' ' || name || ': ' || coalesce(sql, '') AS line FROM sqlite_master ORDER BY type, name"
            ]
        case .postgres:
            queries = [
                """
                SELECT format('%s.%s %s nullable=%s default=%s', table_name, column_name, data_type, is_nullable,
                              coalesce(column_default, '-')) AS line
                FROM information_schema.columns WHERE table_schema = current_schema()
                ORDER BY table_name, ordinal_position
                """,
                "SELECT indexdef AS line FROM pg_indexes WHERE schemaname = current_schema() ORDER BY indexname",
                """
                SELECT format('%s %s %s', conrelid::regclass, conname, pg_get_constraintdef(oid)) AS line
                FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
                ORDER BY conrelid::regclass::text, conname
                """,
            ]
        }
        var lines: [String] = []
        for query in queries {
            lines += try await db.query(query, []).map { try $0.string("line") }
        }
        return lines
    }
}
