import AsyncTestSupport
import DatabaseTestSupport
import Foundation
import Storage
import Testing

/// `herald serve` against a client token holder who acts as an attacker would, on SQLite and
/// PostgreSQL: another user's device answers as an unknown one, a user's devices are bounded
/// without a real user ever being refused, clients set only the tags the operator allows, and a
/// token that moves to another user is counted and reported.
@Suite("herald serve: hostile clients on the device registry", .serialized)
struct ServeClientDevicesHostileTests {
    static let hostile = ServeClientDevicesTests()

    /// A device token of 64 hex digits made from `n`.
    static func device(_ n: Int) -> String {
        String(format: "%064x", 0xD000_0000 + n)
    }

    /// `herald_device_reassignments_total` as `/metrics` shows it (0 before the first).
    func reassignments(_ server: LiveActivityServer) async throws -> Double {
        let metrics = try await fetch(server.base + "/metrics")
        #expect(metrics.status == 200)
        let line = metrics.body.split(separator: "\n").first { $0.hasPrefix("herald_device_reassignments_total ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
    }

    /// The `data` of every `type` event recorded in the webhook outbox.
    func outboxEvents(_ database: TestDatabase, type: String) async throws -> [[String: Any]] {
        let db = try await database.open()
        let rows = try await db.query(
            "SELECT event FROM webhook_outbox WHERE event_type = $1 ORDER BY created_at, event_id",
            [.text(type)]
        )
        await db.close()
        return try rows.compactMap { row in
            let json = try JSONSerialization.jsonObject(with: Data(try row.string("event").utf8)) as? [String: Any]
            return json?["data"] as? [String: Any]
        }
    }

    @Test(
        "another user's device is unknown, the 21st device evicts the oldest, tags are allow-listed, moves are reported",
        arguments: ServeLiveActivitiesTests.backends
    )
    func hostileClient(backend: Backend) async throws {
        let database = try await LiveActivityServer.database(backend)
        defer { Task { await database.remove() } }
        let server = try await LiveActivityServer.start(
            databaseURL: database.url,
            environment: [
                "HERALD_CLIENT_TAGS": "news,lang-*",
                // The webhook below only collects events in the outbox: its loopback receiver is closed.
                "HERALD_WEBHOOK_ALLOW_HTTP": "1", "HERALD_WEBHOOK_ALLOW_PRIVATE": "1",
            ]
        )
        let u1 = try await LiveActivityServer.clientToken("u1")
        let u2 = try await LiveActivityServer.clientToken("u2")
        let u3 = try await LiveActivityServer.clientToken("u3")
        let webhook = try await server.call(
            "POST",
            "/v1/webhooks",
            ["url": "http://127.0.0.1:9/herald", "events": ["device.reassigned", "device.invalidated"]]
        )
        #expect(webhook.status == 201, "\(webhook.body)")
        let client = "\(server.base)/v1/client/devices/"

        // No existence oracle: u1's device and a device nobody has answer u2 the same.
        let mine = Self.device(1)
        #expect(try await Self.hostile.send("PUT", client + mine, token: u1, body: "{}").status == 201)
        let theirs = try await Self.hostile.send("DELETE", client + mine, token: u2)
        let unknown = try await Self.hostile.send("DELETE", client + Self.device(999), token: u2)
        #expect(theirs.status == 404)
        #expect(theirs.body.contains(#""code":"not_found""#), "\(theirs.body)")
        #expect(theirs.status == unknown.status)
        #expect(theirs.body == unknown.body)
        let varying: Set<String> = ["x-request-id", "date"]
        #expect(
            theirs.headers.filter { !varying.contains($0.key) } == unknown.headers.filter { !varying.contains($0.key) }
        )
        let listed = try await Self.hostile.send("GET", "\(server.base)/v1/client/devices", token: u2)
        #expect(listed.status == 200)
        #expect(!listed.body.contains(mine))
        let kept = try await server.call("GET", "/v1/devices/\(mine)")
        #expect(kept.body["user_id"] as? String == "u1", "u2's delete left u1's device alone")

        // Tags: only those HERALD_CLIENT_TAGS allows, named when refused; the API key sets any.
        let tagged = Self.device(2)
        let staff = try await Self.hostile.send(
            "PUT",
            client + tagged,
            token: u1,
            body: #"{"tags": ["news", "lang-fr", "staff"]}"#
        )
        #expect(staff.status == 403, "\(staff.body)")
        #expect(staff.body.contains(#""code":"tag_not_allowed""#))
        #expect(staff.body.contains(#""field":"tags[2]""#))
        #expect(staff.body.contains("staff"))
        #expect(try await server.call("GET", "/v1/devices/\(tagged)").status == 404, "nothing stored")
        let allowed = try await Self.hostile.send(
            "PUT",
            client + tagged,
            token: u1,
            body: #"{"tags": ["news", "lang-pt-BR"]}"#
        )
        #expect(allowed.status == 201, "\(allowed.body)")
        #expect(allowed.body.contains(#""tags":["news","lang-pt-BR"]"#))
        let byKey = try await server.call(
            "PUT",
            "/v1/devices/\(Self.device(3))",
            ["user_id": "u4", "tags": ["staff", "vip"]]
        )
        #expect(byKey.status == 201, "\(byKey.body)")
        #expect(byKey.body["tags"] as? [String] == ["staff", "vip"])

        // The quota: u3's 21st device evicts the least recently registered; u3 is never refused.
        for n in 100..<121 {
            let registered = try await Self.hostile.send("PUT", client + Self.device(n), token: u3, body: "{}")
            #expect(registered.status == 201, "device \(n): \(registered.body)")
        }
        let oldest = try await server.call("GET", "/v1/devices/\(Self.device(100))")
        #expect(oldest.body["status"] as? String == "invalid", "\(oldest.body)")
        #expect(oldest.body["invalid_reason"] as? String == "evicted")
        let newest = try await server.call("GET", "/v1/devices/\(Self.device(120))")
        #expect(newest.body["status"] as? String == "active")
        let active = try await server.call("GET", "/v1/devices?user_id=u3&status=active&limit=100")
        #expect((active.body["devices"] as? [[String: Any]])?.count == 20)
        // The evicted device reinstalled: accepted again, and the next oldest goes.
        #expect(try await Self.hostile.send("PUT", client + Self.device(100), token: u3, body: "{}").status == 200)
        let next = try await server.call("GET", "/v1/devices/\(Self.device(101))")
        #expect(next.body["invalid_reason"] as? String == "evicted")
        // The API key registering a device for u3 counts toward the same quota.
        #expect(try await server.call("PUT", "/v1/devices/\(Self.device(121))", ["user_id": "u3"]).status == 201)
        let third = try await server.call("GET", "/v1/devices/\(Self.device(102))")
        #expect(third.body["invalid_reason"] as? String == "evicted")
        let stillActive = try await server.call("GET", "/v1/devices?user_id=u3&status=active&limit=100")
        #expect((stillActive.body["devices"] as? [[String: Any]])?.count == 20)

        // Reassignment: u2 signs in on u1's phone. Counted, reported, and new to u2 (201, as unknown).
        let before = try await reassignments(server)
        let moved = try await Self.hostile.send("PUT", client + mine, token: u2, body: "{}")
        #expect(moved.status == 201, "\(moved.body)")
        #expect(moved.body.contains(#""user_id":"u2""#))
        #expect(try await reassignments(server) == before + 1)
        let u1Devices = try await Self.hostile.send("GET", "\(server.base)/v1/client/devices", token: u1)
        #expect(!u1Devices.body.contains(mine))
        let reassigned = try await outboxEvents(database, type: "device.reassigned")
        #expect(reassigned.count == 1)
        #expect(reassigned.first?["token"] as? String == mine)
        #expect(reassigned.first?["app"] as? String == LiveActivityServer.topic)
        #expect(reassigned.first?["environment"] as? String != nil)
        #expect(reassigned.first?["from_user_id"] as? String == "u1")
        #expect(reassigned.first?["to_user_id"] as? String == "u2")
        let evicted = try await outboxEvents(database, type: "device.invalidated")
        #expect(evicted.count == 3)
        #expect(Set(evicted.compactMap { $0["token"] as? String }) == Set([100, 101, 102].map(Self.device)))
        #expect(evicted.allSatisfy { $0["reason"] as? String == "evicted" })

        try await server.stop()
    }

    @Test(
        "herald serve and herald config refuse a HERALD_CLIENT_TAGS or HERALD_CLIENT_MAX_DEVICES they cannot use, exit 2"
    )
    func invalidSettings() async throws {
        let result = try await JobsCommandTests.herald(
            ["serve", "--host", "127.0.0.1", "--port", "0"],
            environment: [
                "DATABASE_URL": "sqlite::memory:", "HERALD_CLIENT_TAGS": "news,,la*ng",
                "HERALD_CLIENT_MAX_DEVICES": "0",
            ]
        )
        #expect(result.status == 2, "\(result.error)")
        #expect(result.error.contains("HERALD_CLIENT_TAGS is not valid: entry 2 is empty"), "\(result.error)")
        #expect(result.error.contains("HERALD_CLIENT_MAX_DEVICES=0 is not valid"), "\(result.error)")
        let config = try await JobsCommandTests.herald(
            ["config"],
            environment: ["HERALD_CLIENT_TAGS": "staff*x", "HERALD_CLIENT_MAX_DEVICES": "1001"]
        )
        #expect(config.status == 2, "\(config.error)")
        #expect(config.error.contains("HERALD_CLIENT_TAGS is not valid: entry 1"), "\(config.error)")
        #expect(config.error.contains("HERALD_CLIENT_MAX_DEVICES=1001 is not valid"), "\(config.error)")
    }
}
