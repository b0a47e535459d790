import AsyncTestSupport
import DatabaseTestSupport
import Foundation
import SocketTestSupport
import Testing

/// `herald serve --simulator` end to end: a channel activity updated by one broadcast, a scheduled
/// start and end that happen once across a restart, and a 4xx for every input limit.
@Suite("herald serve: Live Activities scheduling and limits", .serialized)
struct ServeLiveActivitiesScheduleTests {
    static let pushToStart = String(repeating: "b4", count: 32)

    static func register(_ server: LiveActivityServer, user: String = "u1") async throws {
        let (status, body) = try await server.call(
            "PUT",
            "/v1/users/\(user)/push-to-start-tokens",
            ["attributes_type": "MeetupAttributes", "token": pushToStart]
        )
        #expect(status == 201 || status == 200, "\(body)")
    }

    static var create: [String: Any] {
        [
            "attributes_type": "MeetupAttributes", "attributes": ["place": "Park"], "content_state": ["coming": 1],
            "alert": ["title": "Meetup", "body": "Starting soon"], "audience": ["users": ["u1"]],
        ]
    }

    @Test(
        "a channel activity starts with input-push-channel and is updated and ended by one broadcast each",
        arguments: ServeLiveActivitiesTests.backends
    )
    func channel(backend: Backend) async throws {
        let database = try await LiveActivityServer.database(backend)
        defer { Task { await database.remove() } }
        let server = try await LiveActivityServer.start(
            databaseURL: database.url,
            environment: ["HERALD_CHANNEL_RETENTION": "0"]
        )
        try await Self.register(server)
        var body = Self.create
        body["channel"] = ["create": true, "storage_policy": 0]
        let (status, created) = try await server.call("POST", "/v1/live-activities", body)
        #expect(status == 201, "\(created)")
        let id = try #require(created["id"] as? String)
        let channel = try #require(created["channel_id"] as? String)
        _ = try await server.activity(id, state: "started")
        let start = try #require(try await server.deliveries(token: Self.pushToStart, count: 1).last)
        #expect(start.payload("aps")["input-push-channel"] as? String == channel)
        #expect(start.payload("aps")["input-push-token"] == nil)

        let update = try await server.call("POST", "/v1/live-activities/\(id)/update", ["content_state": ["coming": 2]])
        #expect(
            update.body["routes"] as? [String: Int] == ["broadcast": 1, "update_token": 0, "silent": 0, "pending": 0]
        )
        try await server.call("POST", "/v1/live-activities/\(id)/end", [:])
        var broadcasts: [[String: Any]] = []
        try await eventually("two broadcasts", timeout: .seconds(30)) {
            broadcasts = try await server.deliveries().filter { $0["kind"] as? String == "broadcast" }
            return broadcasts.count >= 2
        }
        #expect(broadcasts.count == 2)
        #expect(broadcasts.allSatisfy { $0["channel_id"] as? String == channel && $0["status"] as? Int == 200 })
        // The update and the end are sent by jobs of their own and may reach APNs in either
        // order; the device orders them by timestamp, which must put the end last.
        let byTimestamp = broadcasts.sorted {
            ($0.payload("aps")["timestamp"] as? Int ?? 0) < ($1.payload("aps")["timestamp"] as? Int ?? 0)
        }
        #expect(Set(broadcasts.compactMap { $0.payload("aps")["timestamp"] as? Int }).count == 2)
        #expect(byTimestamp.map { $0.payload("aps")["event"] as? String } == ["update", "end"])
        let state = try await server.activity(id, state: "ended")
        #expect(state["channel_created"] as? Bool == true)
        // With HERALD_CHANNEL_RETENTION=0 the channel Herald created is deleted right after the end.
        try await eventually("the channel deleted", timeout: .seconds(30)) {
            let channels = try await server.call("GET", "/simulator/channels").body["channels"] as? [[String: Any]]
            return channels?.isEmpty == true
        }
        try await server.stop()
    }

    @Test(
        "start_at and end_at run once across a restart; a scheduled activity can be cancelled",
        arguments: ServeLiveActivitiesTests.backends
    )
    func scheduled(backend: Backend) async throws {
        let database = try await LiveActivityServer.database(backend)
        defer { Task { await database.remove() } }
        var server = try await LiveActivityServer.start(databaseURL: database.url)
        try await Self.register(server)
        let now = Int(Date().timeIntervalSince1970)
        var body = Self.create
        body["start_at"] = now + 4
        // Ten seconds between start and end: the restart, the registration and the start all happen
        // in between, also on a loaded machine.
        body["end_at"] = now + 14
        let (status, created) = try await server.call("POST", "/v1/live-activities", body)
        #expect(status == 201, "\(created)")
        #expect(created["state"] as? String == "scheduled")
        let id = try #require(created["id"] as? String)
        var cancelled = Self.create
        cancelled["start_at"] = now + 3_600
        let (_, later) = try await server.call("POST", "/v1/live-activities", cancelled)
        let laterID = try #require(later["id"] as? String)
        let (deleted, answer) = try await server.call("DELETE", "/v1/live-activities/\(laterID)")
        #expect(deleted == 200, "\(answer)")
        #expect(answer["state"] as? String == "cancelled")
        try await server.stop()

        // Another process on the same database starts and ends it.
        server = try await LiveActivityServer.start(databaseURL: database.url)
        _ = try await server.activity(id, state: "started")
        let (registered, _) = try await server.call(
            "POST",
            "/v1/client/live-activities/\(id)/instances",
            ["activity_id": "ios-m", "device_token": String(repeating: "c5", count: 32)],
            token: try await LiveActivityServer.clientToken("u1")
        )
        #expect(registered == 201)
        let ended = try await server.activity(id, state: "ended")
        try await eventually("the end delivered", timeout: .seconds(30)) {
            let routes =
                (try await server.call("GET", "/v1/live-activities/\(id)").body["deliveries"] as? [[String: Any]])
            return routes?.contains { $0["event"] as? String == "end" } == true
        }
        let deliveries =
            try await server.call("GET", "/v1/live-activities/\(id)").body["deliveries"] as? [[String: Any]] ?? []
        #expect(deliveries.filter { $0["event"] as? String == "start" }.count == 1, "\(deliveries)")
        #expect(deliveries.filter { $0["event"] as? String == "end" }.count == 1, "\(deliveries)")
        #expect(ended["ended_at"] is String)
        #expect(try await server.call("GET", "/v1/live-activities/\(laterID)").body["state"] as? String == "cancelled")
        let list = try await server.call("GET", "/v1/live-activities?state=cancelled&user_id=u1&limit=10").body
        #expect((list["live_activities"] as? [[String: Any]])?.map { $0["id"] as? String } == [laterID])
        try await server.stop()
    }

    @Test("every input limit is a 4xx naming the field")
    func limits() async throws {
        let database = try await LiveActivityServer.database(.sqliteFile)
        defer { Task { await database.remove() } }
        let server = try await LiveActivityServer.start(databaseURL: database.url)
        try await Self.register(server)
        func with(_ changes: [String: Any]) -> [String: Any] { Self.create.merging(changes) { _, new in new } }
        let big = String(repeating: "x", count: 5_000)
        let cases: [(String, [String: Any], Int, String)] = [
            (
                "attributes and content_state over 4 KB", with(["attributes": ["p": big]]), 413,
                "activity_data_too_large"
            ),
            ("content_state alone over 4 KB", with(["content_state": ["p": big]]), 413, "activity_data_too_large"),
            ("alert title", with(["alert": ["title": big, "body": "b"]]), 413, "alert_too_long"),
            ("attributes_type", with(["attributes_type": big]), 413, "attributes_type_too_long"),
            ("id_attribute", with(["id_attribute": big]), 413, "id_attribute_too_long"),
            ("unknown field", with(["colour": "red"]), 400, "unknown_field"),
            ("id", with(["id": "not-a-uuid"]), 400, "invalid_id"),
            ("users", with(["audience": ["users": (0...10_000).map { "u\($0)" }]]), 413, "too_many_users"),
            ("start_at in the past", with(["start_at": 1_000_000]), 400, "invalid_start_at"),
            (
                "end_at after 8 hours", with(["end_at": Int(Date().timeIntervalSince1970) + 9 * 3_600]), 400,
                "invalid_end_at"
            ),
            ("relevance_score", with(["relevance_score": -1]), 400, "invalid_relevance_score"),
            (
                "storage_policy", with(["channel": ["create": true, "storage_policy": 2]]), 400,
                "invalid_storage_policy"
            ),
            ("content_state missing", Self.create.filter { $0.key != "content_state" }, 400, "missing_field"),
            ("alert missing", Self.create.filter { $0.key != "alert" }, 400, "missing_field"),
        ]
        for (what, body, status, code) in cases {
            let answer = try await server.call("POST", "/v1/live-activities", body)
            #expect(answer.status == status, "\(what): \(answer.body)")
            #expect((answer.body["error"] as? [String: Any])?["code"] as? String == code, "\(what): \(answer.body)")
        }
        // Refused on its Content-Length before any of the body is read: sent as headers alone (a
        // client still writing the body when the server answers and closes may see a broken pipe
        // instead of the answer).
        let port = try #require(URL(string: server.base)?.port)
        let tooLarge = try await Loopback.exchange(
            port: port,
            "POST /v1/live-activities HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(LiveActivityServer.key)\r\n"
                + "Content-Type: application/json\r\nContent-Length: 3200000\r\n\r\n"
        )
        #expect(tooLarge.hasPrefix("HTTP/1.1 413"), "\(tooLarge.prefix(200))")
        let deep = try await server.raw(
            "POST",
            "/v1/live-activities",
            String(repeating: "[", count: 40) + String(repeating: "]", count: 40)
        )
        #expect(deep.status == 400)

        let (_, created) = try await server.call("POST", "/v1/live-activities", Self.create)
        let id = try #require(created["id"] as? String)
        _ = try await server.activity(id, state: "started")
        let updates: [(String, [String: Any], Int)] = [
            ("priority", ["content_state": [:], "priority": 7], 400),
            ("content_state", ["content_state": ["p": big]], 413),
            ("missing content_state", [:], 400),
            ("dismissal_date on an update", ["content_state": [:], "dismissal_date": 0], 400),
            ("stale_date", ["content_state": [:], "stale_date": "soon"], 400),
        ]
        for (what, body, status) in updates {
            #expect(try await server.call("POST", "/v1/live-activities/\(id)/update", body).status == status, "\(what)")
        }
        let token = try await LiveActivityServer.clientToken("u1")
        let instance = "/v1/client/live-activities/\(id)/instances"
        #expect(try await server.call("POST", instance, ["activity_id": big], token: token).status == 413)
        #expect(
            try await server.call("POST", instance, ["activity_id": "a", "device_token": "xyz"], token: token).status
                == 400
        )
        #expect(
            try await server.call("POST", instance, ["activity_id": "a", "state": "gone"], token: token).status == 400
        )
        #expect(try await server.call("POST", instance, [:], token: token).status == 400)
        let pushToStart = "/v1/client/push-to-start-tokens"
        #expect(try await server.call("PUT", pushToStart, ["attributes_type": "T"], token: token).status == 400)
        #expect(
            try await server.call(
                "PUT",
                pushToStart,
                ["attributes_type": big, "token": Self.pushToStart],
                token: token
            ).status == 413
        )
        #expect(try await server.call("GET", "/v1/live-activities?limit=1001").status == 400)
        #expect(try await server.call("GET", "/v1/live-activities?state=gone").status == 400)
        #expect(try await server.call("GET", "/v1/live-activities?cursor=nope").status == 400)
        #expect(try await server.call("GET", "/v1/live-activities?colour=red").status == 400)
        #expect(try await server.call("GET", "/v1/live-activities/\(UUID().uuidString)").status == 404)
        try await server.stop()
    }
}
