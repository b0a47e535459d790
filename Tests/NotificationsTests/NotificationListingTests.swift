import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import Notifications
import Storage
import Testing

/// `NotificationStore.list`: filters, newest-first keyset pages, and the indexes that serve them.
@Suite("Notification listing")
struct NotificationListingTests {
    /// Five notifications a second apart, then two in the same millisecond; the second and
    /// fourth cancelled.
    static func populate(_ harness: NotificationHarness) async throws -> [StoredNotification] {
        var created: [StoredNotification] = []
        let sendAt = Int(harness.clock.now().timeIntervalSince1970) + 3_600
        for index in 0..<7 {
            if index < 6 { harness.clock.advance(1) }
            created.append(
                try await harness.create(
                    tokens: NotificationHarness.tokens(1, offset: index),
                    extra: ["send_at": sendAt]
                )
            )
        }
        _ = try await harness.service.cancel(id: created[1].id)
        _ = try await harness.service.cancel(id: created[3].id)
        return created
    }

    /// Every page of `query`, followed cursor by cursor.
    static func all(_ harness: NotificationHarness, _ query: NotificationListQuery) async throws -> [UUID] {
        var query = query
        var ids: [UUID] = []
        while true {
            let page = try await harness.store.list(query)
            ids += page.items.map(\.id)
            guard let next = page.nextCursor else { return ids }
            #expect(page.items.count == query.limit)
            query.cursor = NotificationCursor(next)
            #expect(query.cursor != nil, "\(next)")
        }
    }

    @Test("newest first, filtered by status, app and creation time, in keyset pages", arguments: Backend.allCases)
    func listing(_ backend: Backend) async throws {
        try await NotificationHarness.with(backend) { harness in
            let created = try await Self.populate(harness)
            // Newest first; the two created in the same millisecond by id, descending.
            let tied = [created[5], created[6]].map(\.id).sorted {
                $0.uuidString.lowercased() > $1.uuidString.lowercased()
            }
            let newestFirst = tied + created[0..<5].reversed().map(\.id)
            #expect(try await Self.all(harness, NotificationListQuery(limit: 1_000)) == newestFirst)
            for limit in [1, 2, 3] {
                #expect(try await Self.all(harness, NotificationListQuery(limit: limit)) == newestFirst)
            }
            #expect(
                try await Self.all(harness, NotificationListQuery(status: .cancelled, limit: 1))
                    == [created[3].id, created[1].id]
            )
            #expect(try await Self.all(harness, NotificationListQuery(status: .scheduled, limit: 2)).count == 5)
            #expect(try await Self.all(harness, NotificationListQuery(status: .done, limit: 2)).isEmpty)
            #expect(
                try await Self.all(harness, NotificationListQuery(app: NotificationHarness.topic, limit: 4)).count == 7
            )
            #expect(try await Self.all(harness, NotificationListQuery(app: "com.example.other", limit: 4)).isEmpty)
            let window = NotificationListQuery(
                createdAfter: created[0].createdAt,
                createdBefore: created[3].createdAt,
                limit: 1
            )
            #expect(try await Self.all(harness, window) == [created[2].id, created[1].id])
            #expect(
                try await Self.all(
                    harness,
                    NotificationListQuery(status: .cancelled, createdAfter: created[1].createdAt, limit: 5)
                )
                    == [created[3].id]
            )
        }
    }

    /// The plan of `query`'s statement, one line per row.
    static func plan(_ db: any Database, _ query: NotificationListQuery) async throws -> [String] {
        let (sql, binds) = NotificationStore.listStatement(query)
        switch db.dialect {
        case .sqlite:
            return try await db.query("EXPLAIN QUERY PLAN " + sql, binds).map { try $0.string("detail") }
        case .postgres:
            // On an almost empty table a sequential scan is cheapest: take it away to see whether
            // an index serves the filter and the order.
            return try await db.transaction { tx in
                try await tx.execute("SET LOCAL enable_seqscan = off", [])
                try await tx.execute("SET LOCAL enable_bitmapscan = off", [])
                return try await tx.query("EXPLAIN " + sql, binds).map { try $0.string("QUERY PLAN") }
            }
        }
    }

    @Test(
        "each way in is served by an index in the listing's order, with no sort",
        arguments: [Backend.sqliteFile, .postgres]
    )
    func indexes(_ backend: Backend) async throws {
        try await NotificationHarness.with(backend) { harness in
            _ = try await Self.populate(harness)
            let cursor = try #require(NotificationCursor("\(EpochTime.milliseconds(harness.clock.now())):\(UUID())"))
            let cases: [(NotificationListQuery, String)] = [
                (NotificationListQuery(limit: 100), "notifications_created"),
                (NotificationListQuery(limit: 100, cursor: cursor), "notifications_created"),
                (NotificationListQuery(status: .scheduled, limit: 100, cursor: cursor), "notifications_status_created"),
                (NotificationListQuery(app: NotificationHarness.topic, limit: 100), "notifications_app_created"),
            ]
            for (query, index) in cases {
                let plan = try await Self.plan(harness.database, query)
                #expect(plan.contains { $0.contains(index) }, "\(query): \(plan)")
                #expect(!plan.contains { $0.contains("TEMP B-TREE") || $0.contains("Sort") }, "\(query): \(plan)")
            }
        }
    }

    @Test(
        "a retry pass reads its unfinished tokens through the partial index, in order, with no sort",
        arguments: [Backend.sqliteFile, .postgres]
    )
    func unfinishedIndex(_ backend: Backend) async throws {
        try await NotificationHarness.with(backend) { harness in
            let db = harness.database
            let binds: [SQLValue] = [SQLValue(UUID()), SQLValue(-1), SQLValue(1_000)]
            let plan: [String]
            switch db.dialect {
            case .sqlite:
                plan = try await db.query("EXPLAIN QUERY PLAN " + NotificationStore.unfinishedStatement, binds)
                    .map { try $0.string("detail") }
            case .postgres:
                plan = try await db.transaction { tx in
                    try await tx.execute("SET LOCAL enable_seqscan = off", [])
                    try await tx.execute("SET LOCAL enable_bitmapscan = off", [])
                    return try await tx.query("EXPLAIN " + NotificationStore.unfinishedStatement, binds)
                        .map { try $0.string("QUERY PLAN") }
                }
            }
            #expect(plan.contains { $0.contains("notification_deliveries_unfinished") }, "\(plan)")
            #expect(!plan.contains { $0.contains("TEMP B-TREE") || $0.contains("Sort") }, "\(plan)")
        }
    }
}
