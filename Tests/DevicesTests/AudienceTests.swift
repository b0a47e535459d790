import APNs
import DatabaseTestSupport
import Devices
import Foundation
import HeraldCore
import Storage
import Testing

@Suite("Devices: audiences and listing in keyset pages on every backend")
struct AudienceTests {
    let t = Date(timeIntervalSince1970: 1_800_000_000)

    /// Every page of `selector`, `limit` at a time, resuming from each page's cursor as text (as a
    /// send restarted mid-way would).
    func readAll(
        _ store: DeviceStore,
        _ selector: AudienceSelector,
        limit: Int
    ) async throws -> (tokens: [String], pages: Int) {
        var tokens: [String] = []
        var cursor: AudienceCursor?
        var pages = 0
        repeat {
            let page = try await store.activeTokens(
                app: app,
                environment: .production,
                selector: selector,
                after: cursor,
                limit: limit
            )
            #expect(page.tokens.count <= limit)
            tokens += page.tokens
            pages += 1
            cursor = try page.next.map { try #require(AudienceCursor(text: $0.text)) }
        } while cursor != nil
        return (tokens, pages)
    }

    @Test("all, users, any tag and all tags select exactly the active devices, each once", arguments: Backend.allCases)
    func selectors(backend: Backend) async throws {
        try await withDevices(backend) { store, db in
            // 1,300 devices: user u<n % 650> (two devices per user, over two user statements of
            // 500), tags by residue, every 10th invalid, and one in the sandbox.
            var registrations: [DeviceRegistration] = []
            for n in 1...1_300 {
                var tags: [String] = []
                if n % 2 == 0 { tags.append("even") }
                if n % 3 == 0 { tags.append("three") }
                if n % 5 == 0 { tags.append("five") }
                registrations.append(registration(n, at: t, user: "u\(n % 650)", tags: tags))
            }
            registrations.append(registration(5_000, at: t, user: "u1", tags: ["even"], environment: .sandbox))
            var start = 0
            while start < registrations.count {
                let end = min(start + 1_000, registrations.count)
                _ = try await store.register(Array(registrations[start..<end]))
                start = end
            }
            let dead = stride(from: 10, through: 1_300, by: 10).map {
                invalidation($0, at: t.addingTimeInterval(1), recorded: t.addingTimeInterval(1))
            }
            try await db.transaction { tx in
                _ = try await store.invalidate(dead, app: app, environment: .production, on: tx)
            }
            let active = (1...1_300).filter { $0 % 10 != 0 }

            let all = try await readAll(store, .all, limit: 97)
            #expect(all.tokens == active.map(token).sorted())
            #expect(all.pages == active.count / 97 + 1)

            let users = ["u1", "u2", "u649", "u0", "nobody"] + (100..<600).map { "u\($0)" }
            let wanted = Set(users)
            let byUser = try await readAll(store, .users(users), limit: 37)
            #expect(byUser.tokens.count == Set(byUser.tokens).count)
            #expect(Set(byUser.tokens) == Set(active.filter { wanted.contains("u\($0 % 650)") }.map(token)))

            let any = try await readAll(store, .anyTag(["three", "five"]), limit: 50)
            #expect(any.tokens == active.filter { $0 % 3 == 0 || $0 % 5 == 0 }.map(token).sorted())

            let every = try await readAll(store, .allTags(["even", "three"]), limit: 20)
            #expect(every.tokens == active.filter { $0 % 6 == 0 }.map(token).sorted())

            let single = try await readAll(store, .anyTag(["five"]), limit: 1_000)
            #expect(single.tokens == active.filter { $0 % 5 == 0 }.map(token).sorted())
            #expect(single.pages == 1)
            #expect(try await readAll(store, .anyTag(["none"]), limit: 10).tokens.isEmpty)
        }
    }

    @Test("cursors that this API did not make are refused; its own survive text")
    func cursorText() throws {
        #expect(AudienceCursor(text: "") == nil)
        #expect(AudienceCursor(text: "u.zz.abc") == nil)
        #expect(AudienceCursor(text: "u.6162") == nil)
        let user = try #require(AudienceCursor(text: "u.75c3a9.\(token(1))"))
        #expect(AudienceCursor(text: user.text) == user)
        #expect(user.text == "u.75c3a9.\(token(1))")
    }

    @Test("GET /v1/devices' filters: user, tag, status; keyset pages in token order", arguments: Backend.allCases)
    func listing(backend: Backend) async throws {
        try await withDevices(backend) { store, db in
            _ = try await store.register(
                (1...30).map {
                    registration($0, at: t, user: $0 <= 10 ? "alice" : "bob", tags: $0 % 2 == 0 ? ["even"] : [])
                }
            )
            try await db.transaction { tx in
                _ = try await store.invalidate(
                    [invalidation(2, at: t.addingTimeInterval(1), recorded: t), invalidation(31, at: t, recorded: t)],
                    app: app,
                    environment: .production,
                    on: tx
                )
            }
            var query = DeviceListQuery(app: app, environment: .production, limit: 7)
            var seen: [String] = []
            repeat {
                let page = try await store.list(query)
                seen += page.items.map(\.token)
                query.cursor = page.nextCursor
            } while query.cursor != nil
            #expect(seen == (1...31).map(token).sorted())

            let alice = try await store.list(DeviceListQuery(app: app, environment: .production, userID: "alice"))
            #expect(alice.items.map(\.token) == (1...10).map(token))
            let even = try await store.list(
                DeviceListQuery(app: app, environment: .production, userID: "alice", tag: "even")
            )
            #expect(even.items.map(\.token) == [2, 4, 6, 8, 10].map(token))
            let invalid = try await store.list(DeviceListQuery(app: app, environment: .production, status: .invalid))
            #expect(invalid.items.map(\.token) == [token(2), token(31)])
            let activeEven = try await store.list(
                DeviceListQuery(app: app, environment: .production, tag: "even", status: .active, limit: 3)
            )
            #expect(activeEven.items.map(\.token) == [4, 6, 8].map(token))
            #expect(activeEven.nextCursor == token(8))
            let sandbox = try await store.list(DeviceListQuery(app: app, environment: .sandbox))
            #expect(sandbox.items.isEmpty)
        }
    }

    @Test("invalid devices go after the retention, counted from when Herald recorded them", arguments: Backend.allCases)
    func retention(backend: Backend) async throws {
        try await withDevices(backend) { store, db in
            let clock = ManualClock(t)
            _ = try await store.register([registration(1, at: t, tags: ["x"]), registration(2, at: t, tags: ["x"])])
            try await db.transaction { tx in
                _ = try await store.invalidate(
                    [
                        invalidation(1, at: t.addingTimeInterval(1), recorded: t.addingTimeInterval(1)),
                        // APNs' T may be long past; the retention counts from the record.
                        invalidation(3, at: t.addingTimeInterval(-90 * 86_400), recorded: t.addingTimeInterval(86_400)),
                    ],
                    app: app,
                    environment: .production,
                    on: tx
                )
            }
            let retention = DeviceRetention(store: store)
            #expect(retention.retention == 30 * 86_400)
            clock.advance(30 * 86_400)
            try await retention.prune(now: clock.now())
            #expect(try await store.device(app: app, environment: .production, token: token(1)) != nil)

            clock.advance(2)
            try await retention.prune(now: clock.now())
            #expect(try await store.device(app: app, environment: .production, token: token(1)) == nil)
            #expect(try await store.device(app: app, environment: .production, token: token(3)) != nil)
            #expect(try await store.device(app: app, environment: .production, token: token(2))?.status == .active)
            let tags = try await db.query("SELECT token FROM device_tags")
            #expect(try tags.map { try $0.string("token") } == [token(2)])

            clock.advance(86_400)
            try await retention.prune(now: clock.now())
            #expect(try await store.device(app: app, environment: .production, token: token(3)) == nil)
            #expect(try await store.device(app: app, environment: .production, token: token(2)) != nil)
        }
    }
}
