import DatabaseTestSupport
import HeraldAPI
import Storage
import Testing

/// Each module owns its migrations and numbers them itself. The single list of before
/// (``LegacySchema``) is frozen: the composed list holds it as migrations released as those
/// versions, and later migrations follow it. A database made by the single list gets just those
/// later ones, and a new database the same schema and record as the single list plus them.
@Suite("schema composition")
struct SchemaCompositionTests {
    /// The migrations added since the single list, in the order they apply.
    static var added: [Migration] {
        let legacy = Set(LegacySchema.migrations.map(\.version))
        return ((try? Migrator.ordered(HeraldSchema.migrations)) ?? []).filter {
            $0.releasedAs.map { !legacy.contains($0) } ?? true
        }
    }

    @Test("the executable composes every module's migrations in one fixed order, none left out")
    func compositionOrder() throws {
        // Module by module, in the order `HeraldSchema` appends their lists, then the features'.
        let expected = [
            "Storage 1 create_kv_settings (1)",
            "Jobs 1 create_jobs (2)", "Jobs 2 jobs_attention (0)",
            "Notifications 1 create_notifications (3)", "Notifications 2 notification_send_owner (4)",
            "Notifications 3 notifications_listing (6)", "Notifications 4 notification_audiences (8)",
            "Notifications 5 notification_pages (15)", "Notifications 6 notification_counts (20)",
            "Notifications 7 notification_deliveries_unfinished (0)",
            "Idempotency 1 create_idempotency_keys (5)",
            "Wake 1 create_wake_schedules (13)", "Wake 2 create_wake_runs_and_pings (14)",
            "LiveActivities 1 create_live_activities (11)", "LiveActivities 2 create_live_activity_deliveries (12)",
            "LiveActivities 3 live_activity_instances_registered_after (16)",
            "LiveActivities 4 live_activities_starting (17)",
            "LiveActivities 5 live_activity_users_from_push_to_start (18)",
            "LiveActivities 6 push_to_start_tokens_user_registered (19)",
            "LiveActivities 7 live_activities_finished (0)",
            "LiveActivities 8 live_activities_channel_storage_policy (0)",
            "Boards 1 create_boards (0)",  // the Boards feature
            "Polls 1 create_polls (0)",  // the Polls feature
            "Admin 1 create_admin_sessions (0)",  // the admin console's sessions
            "Devices 1 create_devices (7)", "Devices 2 devices_active (21)",  // the Devices feature
            "Devices 3 devices_invalid_app (0)",
            "Webhooks 1 create_webhooks (9)", "Webhooks 2 create_webhook_outbox (10)",  // the Webhooks feature
        ]
        #expect(
            HeraldSchema.migrations.map { "\($0.id) \($0.name) (\($0.releasedAs ?? 0))" }.sorted() == expected.sorted()
        )
        // Applied: the released ones in their global order, 1 to 21.
        let released = try Migrator.ordered(HeraldSchema.migrations).compactMap(\.releasedAs)
        #expect(released == Array(1...21))
    }

    @Test("the modules' migrations hold the single list of before (versions, names and SQL), then later ones")
    func modulesComposeTheLegacyList() throws {
        let ordered = try Migrator.ordered(HeraldSchema.migrations)
        let legacy = LegacySchema.migrations
        let first = Array(ordered.prefix(legacy.count))
        #expect(first.map(\.releasedAs) == legacy.map(\.version))
        #expect(first.map(\.name) == legacy.map(\.name))
        #expect(first.map(\.sqlite) == legacy.map(\.sqlite))
        #expect(first.map(\.postgres) == legacy.map(\.postgres))
        let latest = legacy.map(\.version).max() ?? 0
        #expect(Self.added.allSatisfy { ($0.releasedAs ?? Int.max) > latest })
        #expect(
            Self.added.map(\.name) == [
                "notifications_listing", "create_devices", "notification_audiences", "create_webhooks",
                "create_webhook_outbox", "create_live_activities", "create_live_activity_deliveries",
                "create_wake_schedules", "create_wake_runs_and_pings", "notification_pages",
                "live_activity_instances_registered_after", "live_activities_starting",
                "live_activity_users_from_push_to_start", "push_to_start_tokens_user_registered",
                "notification_counts", "devices_active", "jobs_attention", "devices_invalid_app",
                "notification_deliveries_unfinished", "live_activities_finished",
                "live_activities_channel_storage_policy", "create_boards", "create_polls",
                "create_admin_sessions",
            ]
        )
    }

    @Test(
        "herald gives a new database the record and schema the single list gave, upgraded",
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
            try await LegacySchema.apply(LegacySchema.migrations, to: legacy)
            try await Migrator.migrate(legacy, HeraldSchema.migrations, logger: TestDatabase.quiet)
            let expectedRecord = try await Self.recorded(legacy)
            let expectedSchema = try await Self.schema(legacy)
            await legacy.close()

            let migrated = try await byHerald.open()
            let recorded = try await Self.recorded(migrated)
            #expect(recorded == expectedRecord)
            #expect(recorded == HeraldSchema.migrations.map { "\($0.id) \($0.name)" }.sorted())
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
        "herald finds a database the single list migrated: only the later ones applied, nothing renamed or unknown",
        arguments: [Backend.sqliteFile, .postgres]
    )
    func existingDatabase(backend: Backend) async throws {
        try await withDatabase(backend) { db, test in
            try await LegacySchema.apply(LegacySchema.migrations, to: db)

            let run = try await JobsCommandTests.herald(["jobs", "stats", "--database-url", test.url])
            #expect(run.status == 0, "herald jobs stats: \(run.error)")
            // herald jobs logs warnings: a renamed or unknown migration would show here.
            #expect(!run.error.contains("recorded under another name"), "stderr: \(run.error)")
            #expect(!run.error.contains("does not know"), "stderr: \(run.error)")
            // The single list's record is read as it was, when each was applied included.
            let adopted = try await db.query(
                "SELECT module, number, applied_at FROM herald_migrations WHERE applied_at < $1 ORDER BY applied_at",
                [.integer(1_700_000_001_000)]
            )
            #expect(
                try adopted.map { "\(try $0.string("module")) \(try $0.int("number")) \(try $0.int("applied_at"))" }
                    == [
                        "Storage 1 1700000000000", "Jobs 1 1700000000001", "Notifications 1 1700000000002",
                        "Notifications 2 1700000000003", "Idempotency 1 1700000000004",
                    ]
            )
            #expect(try await Self.recorded(db) == HeraldSchema.migrations.map { "\($0.id) \($0.name)" }.sorted())

            let expected = try await TestDatabase.make(backend)
            do {
                let reference = try await expected.open()
                try await Migrator.migrate(reference, HeraldSchema.migrations, logger: TestDatabase.quiet)
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

    /// `herald_migrations` as "module number name", sorted.
    static func recorded(_ db: any Database) async throws -> [String] {
        let rows = try await db.query("SELECT module, number, name FROM herald_migrations", [])
        return try rows.map { "\(try $0.string("module")) \(try $0.int("number")) \(try $0.string("name"))" }.sorted()
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
        // The single list's record, kept as it was in a database it migrated; a new one has none.
        return lines.filter { !$0.contains("schema_migrations") }
    }
}
