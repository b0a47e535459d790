import AsyncTestSupport
import DatabaseTestSupport
import Foundation
import Testing

/// `herald serve --simulator` end to end over HTTP/2 + TLS to the simulator, on SQLite and
/// PostgreSQL: push-to-start, the silent push before an update token and the update-token push
/// after it, the pending update, the 410 fallback, timestamps, channels, cancel and end.
@Suite("herald serve: Live Activities", .serialized)
struct ServeLiveActivitiesTests {
    static let backends: [Backend] = [.sqliteFile, .postgres]

    @Test(
        "an activity started for a user is updated by silent push, then by its update token, then by silent again after a 410",
        arguments: backends
    )
    func routing(backend: Backend) async throws {
        let database = try await LiveActivityServer.database(backend)
        defer { Task { await database.remove() } }
        let server = try await LiveActivityServer.start(databaseURL: database.url)
        let u1 = try await LiveActivityServer.clientToken("u1")
        let pushToStart = String(repeating: "a1", count: 32)
        let device = String(repeating: "d2", count: 32)
        let updateToken = String(repeating: "e3", count: 32)

        let registered = try await server.call(
            "PUT",
            "/v1/client/push-to-start-tokens",
            ["attributes_type": "LoanAttributes", "token": pushToStart],
            token: u1
        )
        #expect(registered.status == 201, "\(registered.body)")
        #expect(
            try await server.call(
                "PUT",
                "/v1/client/push-to-start-tokens",
                ["attributes_type": "LoanAttributes", "token": pushToStart],
                token: u1
            ).status == 200
        )

        // No token for u2: 422, nothing stored.
        let create: [String: Any] = [
            "attributes_type": "LoanAttributes", "attributes": ["product": "Credit card", "heraldID": "mine"],
            "content_state": ["step": 1], "alert": ["title": "Started", "body": "Checking your data"],
            "audience": ["users": ["u1"]],
        ]
        var nobody = create
        nobody["audience"] = ["users": ["u2"]]
        let refused = try await server.call("POST", "/v1/live-activities", nobody)
        #expect(refused.status == 422, "\(refused.body)")
        #expect((refused.body["error"] as? [String: Any])?["code"] as? String == "no_push_to_start_token")
        #expect(
            (try await server.call("GET", "/v1/live-activities").body["live_activities"] as? [Any])?.isEmpty == true
        )

        // Idempotent by id: the same body is 200, another 409.
        let id = UUID().uuidString.lowercased()
        var withID = create
        withID["id"] = id
        let created = try await server.call("POST", "/v1/live-activities", withID)
        #expect(created.status == 201, "\(created.body)")
        #expect(try await server.call("POST", "/v1/live-activities", withID).status == 200)
        var other = withID
        other["content_state"] = ["step": 2]
        #expect(try await server.call("POST", "/v1/live-activities", other).status == 409)

        // The push-to-start carries the id in heraldID (not the caller's value) and input-push-token.
        _ = try await server.activity(id, state: "started")
        let start = try #require(try await server.deliveries(token: pushToStart, count: 1).first)
        #expect(start["push_type"] as? String == "liveactivity")
        #expect(start["topic"] as? String == "\(LiveActivityServer.topic).push-type.liveactivity")
        let startAPS = start.payload("aps")
        #expect(startAPS["event"] as? String == "start")
        #expect((startAPS["attributes"] as? [String: Any])?["heraldID"] as? String == id)
        #expect(startAPS["input-push-token"] as? Int == 1)
        #expect(try await server.call("DELETE", "/v1/live-activities/\(id)").status == 409)

        // An update before any instance is pending, and arrives by silent push on registration.
        let pending = try await server.call("POST", "/v1/live-activities/\(id)/update", ["content_state": ["step": 2]])
        #expect(pending.status == 202)
        #expect(
            pending.body["routes"] as? [String: Int] == ["broadcast": 0, "update_token": 0, "silent": 0, "pending": 1]
        )
        let instancePath = "/v1/client/live-activities/\(id)/instances"
        let instance = try await server.call(
            "POST",
            instancePath,
            ["activity_id": "ios-1", "device_token": device],
            token: u1
        )
        #expect(instance.status == 201, "\(instance.body)")
        let first = try #require(try await server.deliveries(token: device, count: 1).last)
        #expect(first["push_type"] as? String == "background")
        #expect(first["priority"] as? Int == 5)
        #expect(first["topic"] as? String == LiveActivityServer.topic)
        let payload = try #require(first["payload"] as? [String: Any])
        #expect(Set(payload.keys) == ["aps", "live-activity"])
        #expect(payload["aps"] as? [String: Int] == ["content-available": 1])
        let live = first.payload("live-activity")
        #expect(Set(live.keys) == ["id", "activity-id", "event", "content-state", "timestamp"])
        #expect(live["id"] as? String == id)
        #expect(live["activity-id"] as? String == "ios-1")
        #expect(live["event"] as? String == "update")
        #expect(live["content-state"] as? [String: Int] == ["step": 2])

        // Before Allow: silent. The app reports the update token: the same call now goes there.
        let silent = try await server.call("POST", "/v1/live-activities/\(id)/update", ["content_state": ["step": 3]])
        #expect(
            silent.body["routes"] as? [String: Int] == ["broadcast": 0, "update_token": 0, "silent": 1, "pending": 0]
        )
        _ = try await server.deliveries(token: device, count: 2)
        let allowed = try await server.call(
            "POST",
            instancePath,
            ["activity_id": "ios-1", "update_token": updateToken],
            token: u1
        )
        #expect(allowed.status == 200)
        let viaToken = try await server.call("POST", "/v1/live-activities/\(id)/update", ["content_state": ["step": 4]])
        #expect(
            viaToken.body["routes"] as? [String: Int] == ["broadcast": 0, "update_token": 1, "silent": 0, "pending": 0]
        )
        let update = try #require(try await server.deliveries(token: updateToken, count: 1).last)
        #expect(update["push_type"] as? String == "liveactivity")
        #expect(update["topic"] as? String == "\(LiveActivityServer.topic).push-type.liveactivity")
        #expect(update.payload("aps")["content-state"] as? [String: Int] == ["step": 4])

        // 410 on the update token: the same update goes by silent push at once, and the token is dropped.
        let unregistered = try await server.call(
            "POST",
            "/simulator/tokens",
            ["token": updateToken, "unregistered_at": "now"]
        )
        #expect(unregistered.status == 201 || unregistered.status == 200, "\(unregistered.body)")
        let fallback = try await server.call("POST", "/v1/live-activities/\(id)/update", ["content_state": ["step": 5]])
        #expect(fallback.status == 202)
        let dead = try #require(try await server.deliveries(token: updateToken, count: 2).last)
        #expect(dead["status"] as? Int == 410)
        let rescued = try #require(try await server.deliveries(token: device, count: 3).last)
        #expect(rescued.payload("live-activity")["content-state"] as? [String: Int] == ["step": 5])
        #expect(rescued.payload("live-activity")["timestamp"] as? Int == dead.payload("aps")["timestamp"] as? Int)
        // Herald records APNs' answers after the simulator has given them: wait for the fallback's.
        var details: [String: Any] = [:]
        try await eventually("the fallback recorded", timeout: .seconds(30)) {
            details = try await server.call("GET", "/v1/live-activities/\(id)").body
            return (details["deliveries"] as? [[String: Any]])?.first?["route"] as? String == "silent"
        }
        let instances = try #require(details["instances"] as? [[String: Any]])
        #expect(instances.count == 1)
        #expect(instances.first?["update_token_prefix"] is NSNull)
        let routes = (details["deliveries"] as? [[String: Any]] ?? []).compactMap { $0["route"] as? String }
        #expect(routes.first == "silent")
        #expect(Set(routes) == ["push_to_start", "silent", "update_token"])
        #expect(
            (details["deliveries"] as? [[String: Any]])?.allSatisfy { ($0["token_prefix"] as? String)?.count == 8 }
                == true
        )

        // The end: by silent push, the state ended, later updates refused.
        let end = try await server.call("POST", "/v1/live-activities/\(id)/end", ["dismissal_date": 0])
        #expect(end.status == 202, "\(end.body)")
        let ended = try #require(try await server.deliveries(token: device, count: 4).last)
        #expect(ended.payload("live-activity")["event"] as? String == "end")
        #expect(ended.payload("live-activity")["content-state"] as? [String: Int] == ["step": 5])
        #expect(ended.payload("live-activity")["dismissal-date"] as? Int == 0)
        #expect(try await server.call("POST", "/v1/live-activities/\(id)/update", ["content_state": [:]]).status == 409)
        #expect(try await server.call("GET", "/v1/live-activities/\(id)").body["state"] as? String == "ended")

        // Timestamps never go backwards: strictly increasing over every push the activity took.
        var stamps: [Int] = []
        for delivery in try await server.deliveries() {
            let payload = delivery["payload"] as? [String: Any] ?? [:]
            let stamp =
                (payload["live-activity"] as? [String: Any])?["timestamp"]
                ?? (payload["aps"] as? [String: Any])?["timestamp"]
            if let stamp = stamp as? Int, delivery["status"] as? Int == 200 { stamps.append(stamp) }
        }
        #expect(stamps.count == 6, "\(stamps)")
        #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $0 < $1 }, "\(stamps)")

        // Another user's client token cannot report instances: 404, as for an unknown id.
        let u2 = try await LiveActivityServer.clientToken("u2")
        #expect(try await server.call("POST", instancePath, ["activity_id": "ios-2"], token: u2).status == 404)
        #expect(
            try await server.call(
                "POST",
                "/v1/client/live-activities/\(UUID().uuidString)/instances",
                ["activity_id": "x"],
                token: u1
            ).status == 404
        )
        let metrics = try await fetch(server.base + "/metrics").body
        #expect(
            metrics.contains(#"herald_live_activity_deliveries_total{result="dead_token",route="update_token"} 1"#)
                || metrics.contains(
                    #"herald_live_activity_deliveries_total{route="update_token",result="dead_token"} 1"#
                )
        )
        try await server.stop()
    }
}
