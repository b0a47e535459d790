import AsyncTestSupport
import DatabaseTestSupport
import Foundation
import Testing

/// Two `herald serve` processes on one PostgreSQL database: a scheduled activity is started once
/// and ended once, whichever instance claims each job.
@Suite("herald serve: Live Activities on two instances")
struct ServeLiveActivitiesTwoInstancesTests {
    @Test("start_at and end_at happen once with two instances on PostgreSQL")
    func once() async throws {
        let database = try await LiveActivityServer.database(.postgres)
        defer { Task { await database.remove() } }
        let first = try await LiveActivityServer.start(databaseURL: database.url)
        let second = try await LiveActivityServer.start(databaseURL: database.url)
        let pushToStart = String(repeating: "c9", count: 32)
        let device = String(repeating: "d0", count: 32)
        try await first.call(
            "PUT",
            "/v1/users/u9/push-to-start-tokens",
            ["attributes_type": "MeetupAttributes", "token": pushToStart]
        )
        let now = Int(Date().timeIntervalSince1970)
        let (status, created) = try await first.call(
            "POST",
            "/v1/live-activities",
            [
                "attributes_type": "MeetupAttributes", "content_state": ["coming": 0],
                "alert": ["title": "Meetup", "body": "Soon"], "audience": ["users": ["u9"]],
                "start_at": now + 3, "end_at": now + 8,
            ]
        )
        #expect(status == 201, "\(created)")
        let id = try #require(created["id"] as? String)
        _ = try await second.activity(id, state: "started")
        let (registered, _) = try await second.call(
            "POST",
            "/v1/client/live-activities/\(id)/instances",
            ["activity_id": "ios-9", "device_token": device],
            token: try await LiveActivityServer.clientToken("u9")
        )
        #expect(registered == 201)
        _ = try await first.activity(id, state: "ended")
        var recorded: [[String: Any]] = []
        try await eventually("the end delivered", timeout: .seconds(30)) {
            recorded =
                try await first.call("GET", "/v1/live-activities/\(id)").body["deliveries"] as? [[String: Any]] ?? []
            return recorded.contains { $0["event"] as? String == "end" }
        }
        #expect(recorded.filter { $0["event"] as? String == "start" }.count == 1, "\(recorded)")
        #expect(recorded.filter { $0["event"] as? String == "end" }.count == 1, "\(recorded)")
        // Each instance has its own simulator: together they received one start and one end.
        let received = try await first.deliveries() + second.deliveries()
        #expect(received.filter { $0["token"] as? String == pushToStart }.count == 1)
        #expect(received.filter { $0["token"] as? String == device }.count == 1)
        try await first.stop()
        try await second.stop()
    }
}
