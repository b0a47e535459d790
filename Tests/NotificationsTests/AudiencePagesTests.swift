import Audiences
import DatabaseTestSupport
import Devices
import Foundation
import HeraldCore
import Storage
import Testing

@testable import Notifications

/// An audience's resolved pages are stored one row each, and a device's row comes with its first
/// result: pending devices are counted from the pages, resent after a crash only when they have no
/// result, and recorded `failed` or `cancelled` when the send ends without them.
@Suite("Audiences: stored pages")
struct AudiencePagesTests {
    /// A pass that stored one page and wrote results for the first `recorded` of its tokens, then
    /// died (its claim runs out one second later).
    static func diedMidPage(
        _ harness: NotificationHarness,
        registry: FakeRegistry,
        recorded: Int
    ) async throws -> (notification: StoredNotification, page: [String]) {
        let created = try await AudienceSendTests.create(harness, audience: ["all": true])
        let now = harness.clock.now()
        let ownership = NotificationStore.SendOwnership(owner: "dead", until: now.addingTimeInterval(1))
        let claimed = try #require(
            try await harness.store.claimSend(created.id, owner: "dead", until: ownership.until, at: now)
        )
        let page = try await registry.activeTokens(
            of: .all,
            app: created.app,
            environment: created.environment,
            after: nil,
            limit: 4
        )
        let stored = try #require(
            try await harness.store.appendResolved(
                page.tokens,
                to: created.id,
                cursor: page.next,
                ownership: ownership,
                at: now
            )
        )
        let results = stored.prefix(recorded).map {
            DeliveryResult(
                token: $0.token,
                ordinal: $0.ordinal,
                status: .sent,
                apnsID: "dead-pass",
                attempts: 1,
                updatedAt: now
            )
        }
        #expect(try await harness.store.record(Array(results), of: claimed, ownership: ownership))
        return (created, page.tokens)
    }

    static func pageRows(_ harness: NotificationHarness, _ id: UUID) async throws -> Int {
        let row = try await harness.database.queryFirst(
            "SELECT COUNT(*) AS n FROM notification_pages WHERE notification_id = $1",
            [SQLValue(id)]
        )
        return Int(try #require(row).int("n"))
    }

    @Test(
        "a page stored as one row: its devices count as pending without rows; after a crash only those without a result are sent; the page goes once done",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func resumeMidPage(_ backend: Backend) async throws {
        let registry = FakeRegistry()
        let tokens = NotificationHarness.tokens(6)
        for token in tokens { registry.register(token) }
        try await NotificationHarness.with(backend, resolver: registry, pageSize: 4) { harness in
            let (created, page) = try await Self.diedMidPage(harness, registry: registry, recorded: 3)
            #expect(try await harness.results(created.id).map(\.token) == Array(page.prefix(3)))
            let counts = try await NotificationCountsTests.checkedCounts(harness, created.id)
            #expect(counts[.sent] == 3)
            #expect(counts[.pending] == 1, "the page's fourth device has no row yet")
            #expect(try await Self.pageRows(harness, created.id) == 1)

            harness.clock.advance(2)
            let summary = try await harness.sender.send(created.id, isLastAttempt: false, owner: "next")
            #expect(summary.status == .done)
            // The three recorded devices are not sent again; the fourth and the next page's two are.
            let sentAgain = Set(tokens).subtracting(page.prefix(3))
            #expect(
                AudienceSendTests.delivered(harness.simulator)
                    == Dictionary(uniqueKeysWithValues: sentAgain.map { ($0, 1) })
            )
            let results = try await harness.results(created.id)
            #expect(results.map(\.token) == tokens)
            #expect(results.map(\.ordinal) == Array(0..<6))
            #expect(results.filter { $0.apnsID == "dead-pass" }.count == 3)
            let final = try await NotificationCountsTests.checkedCounts(harness, created.id)
            #expect(final[.sent] == 6 && final[.pending] == 0)
            #expect(try await Self.pageRows(harness, created.id) == 0, "a finished send keeps no pages")
        }
    }

    @Test(
        "a send given up on records its pages' devices without a result as failed",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func givenUp(_ backend: Backend) async throws {
        let registry = FakeRegistry()
        for token in NotificationHarness.tokens(4) { registry.register(token) }
        try await NotificationHarness.with(backend, resolver: registry, pageSize: 4) { harness in
            let (created, page) = try await Self.diedMidPage(harness, registry: registry, recorded: 1)
            let failed = try await harness.store.failUnfinished(
                created.id,
                reason: "given up",
                at: harness.clock.now()
            )
            #expect(failed == 3)
            let results = try await harness.results(created.id)
            #expect(results.map(\.token) == page)
            #expect(results.map(\.status) == [.sent, .failed, .failed, .failed])
            #expect(results.dropFirst().allSatisfy { $0.reason == "given up" })
            let counts = try await NotificationCountsTests.checkedCounts(harness, created.id)
            #expect(counts[.pending] == 0 && counts[.failed] == 3)
            #expect(try await Self.pageRows(harness, created.id) == 0)
        }
    }
}
