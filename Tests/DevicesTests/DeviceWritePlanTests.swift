import APNs
import DatabaseTestSupport
import Devices
import Foundation
import HeraldCore
import Storage
import Testing

/// Registering, evicting, invalidating and listing devices must reach each device by its key
/// whatever the statistics say: a statement that reads every device of an app for each batch makes a bulk
/// registration slow down as the registry grows (it fell from 2,600 to 340 devices a second).
@Suite("Devices: SQLite plans every write and every user lookup of the registry by key, before any ANALYZE")
struct DeviceWritePlanTests {
    /// The plan lines of a statement that read a table whole, every device or tag of an app, or
    /// every device of an app in one status.
    static func wholeReads(_ plan: [String]) -> [String] {
        plan.filter { line in
            line.hasPrefix("SCAN devices") || line.hasPrefix("SCAN device_tags")
                || line.hasPrefix("SCAN d ") || line.hasPrefix("SCAN t ") || line.hasSuffix("(app=? AND environment=?)")
                || line.hasSuffix("(app=? AND environment=? AND status=?)")
        }
    }

    @Test("register, re-register, evict past the quota, invalidate, delete, and the users of an audience")
    func writesByKey() async throws {
        try await withDatabase(.sqliteFile) { db, _ in
            try await Migrator.migrate(db, DeviceMigrations.all, logger: quietLogger)
            let plans = QueryPlans()
            let observed = plans.observing(db)
            let store = DeviceStore(database: observed, metrics: MetricsRegistry(), maximumDevicesPerUser: 2)
            let start = Date(timeIntervalSince1970: 1_800_000_000)
            // Enough rows that a read of the whole registry is not free.
            _ = try await store.register((1...300).map { registration($0, at: start, tags: ["news"]) })
            _ = try await store.register(
                (1...3).map { registration($0, at: start.addingTimeInterval(Double($0)), user: "u1", tags: ["sport"]) }
            )
            let dead = [invalidation(200, at: start.addingTimeInterval(10), recorded: start.addingTimeInterval(10))]
            _ = try await observed.transaction { tx in
                try await store.invalidate(dead, app: app, environment: .production, on: tx)
            }
            #expect(try await store.delete(app: app, environment: .production, token: token(201)))
            // The users of a users or tags audience (Live Activities' push-to-start).
            for selector in [AudienceSelector.users(["u1"]), .anyTag(["sport", "news"]), .allTags(["sport", "news"])] {
                let users = try await store.users(app: app, environment: .production, selector: selector)
                #expect(users == (selector == .allTags(["sport", "news"]) ? [] : ["u1"]), "\(selector)")
            }

            // A page of a tag is drawn from the tag's tokens, not by walking every device.
            for status in [nil, DeviceStatus.active, .invalid] {
                let page = try await store.list(
                    DeviceListQuery(app: app, environment: .production, tag: "news", status: status, limit: 10)
                )
                #expect(page.items.count == (status == .invalid ? 1 : 10), "\(String(describing: status))")
                #expect(page.items.allSatisfy { $0.tags == ["news"] && (status == nil || $0.status == status) })
                #expect(page.items.map(\.token) == page.items.map(\.token).sorted())
            }

            // One app's dead tokens, in the order they were recorded, with no sort.
            let deadPage = try await store.deadTokens(
                app: app,
                environment: .production,
                since: nil,
                limit: 10,
                cursor: nil
            )
            #expect(deadPage.items.map(\.token) == [token(1), token(200)])

            let seen = plans.all
            #expect(seen.contains { $0.sql.contains("WITH wanted") }, "the upsert's read was planned")
            #expect(seen.contains { $0.sql.hasPrefix("UPDATE devices SET status = 'invalid'") }, "an eviction ran")
            for (sql, plan) in seen {
                #expect(Self.wholeReads(plan).isEmpty, "\(plan) for \(sql)")
            }
            let deadPlan = seen.filter { $0.sql.contains("ORDER BY invalid_recorded_at, app, environment, token") }
            #expect(deadPlan.count == 1)
            #expect(deadPlan.allSatisfy { !$0.plan.contains { $0.contains("TEMP B-TREE") } }, "\(deadPlan)")
        }
    }
}
