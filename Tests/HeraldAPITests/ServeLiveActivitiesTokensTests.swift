import AsyncTestSupport
import DatabaseTestSupport
import Foundation
import Testing

/// `herald serve --simulator` end to end: the dead-token rule of push-to-start tokens, and an
/// accepted update that survives APNs answering 503 until a later attempt of its job.
@Suite("herald serve: Live Activities tokens and retries", .serialized)
struct ServeLiveActivitiesTokensTests {
    static var create: [String: Any] {
        [
            "attributes_type": "OrderAttributes", "content_state": ["step": 1],
            "alert": ["title": "Order", "body": "Received"], "audience": ["users": ["u7"]],
        ]
    }

    @Test(
        "a 410 after registration invalidates a push-to-start token; registering it again revives it",
        arguments: ServeLiveActivitiesTests.backends
    )
    func deadPushToStart(backend: Backend) async throws {
        let database = try await LiveActivityServer.database(backend)
        defer { Task { await database.remove() } }
        let server = try await LiveActivityServer.start(databaseURL: database.url)
        let token = String(repeating: "f6", count: 32)
        let path = "/v1/users/u7/push-to-start-tokens"
        #expect(
            try await server.call("PUT", path, ["attributes_type": "OrderAttributes", "token": token]).status == 201
        )
        try await server.call("POST", "/simulator/tokens", ["token": token, "unregistered_at": "now"])

        let (status, created) = try await server.call("POST", "/v1/live-activities", Self.create)
        #expect(status == 201, "\(created)")
        let id = try #require(created["id"] as? String)
        let failed = try await server.activity(id, state: "failed")
        let deliveries = failed["deliveries"] as? [[String: Any]] ?? []
        #expect(deliveries.map { $0["status"] as? Int } == [410])
        #expect(deliveries.first?["reason"] as? String == "Unregistered")
        #expect(deliveries.first?["route"] as? String == "push_to_start")
        let refused = try await server.call("POST", "/v1/live-activities", Self.create)
        #expect(refused.status == 422, "the dead token is not used again: \(refused.body)")

        // The app registers it again (after the 410): it is used again.
        try await server.call("DELETE", "/simulator/tokens?token=\(token)")
        let again = try await server.call("PUT", path, ["attributes_type": "OrderAttributes", "token": token])
        #expect(again.status == 200)
        #expect(again.body["status"] as? String == "active")
        let (revived, body) = try await server.call("POST", "/v1/live-activities", Self.create)
        #expect(revived == 201, "\(body)")
        _ = try await server.activity(try #require(body["id"] as? String), state: "started")
        try await server.stop()
    }

    @Test(
        "an update accepted while APNs answers 503 is delivered by a later attempt of its job",
        arguments: ServeLiveActivitiesTests.backends
    )
    func apnsDown(backend: Backend) async throws {
        let database = try await LiveActivityServer.database(backend)
        defer { Task { await database.remove() } }
        let server = try await LiveActivityServer.start(databaseURL: database.url)
        let pushToStart = String(repeating: "a7", count: 32)
        let device = String(repeating: "b8", count: 32)
        try await server.call(
            "PUT",
            "/v1/users/u7/push-to-start-tokens",
            ["attributes_type": "OrderAttributes", "token": pushToStart]
        )
        let (_, created) = try await server.call("POST", "/v1/live-activities", Self.create)
        let id = try #require(created["id"] as? String)
        _ = try await server.activity(id, state: "started")
        let instance = try await server.call(
            "POST",
            "/v1/client/live-activities/\(id)/instances",
            ["activity_id": "ios-7", "device_token": device],
            token: try await LiveActivityServer.clientToken("u7")
        )
        #expect(instance.status == 201)

        // More 503s than the client's own three attempts: the job must try again later.
        let fault = try await server.call(
            "POST",
            "/simulator/faults",
            ["type": "status", "status": 503, "reason": "ServiceUnavailable", "token": device, "times": 4]
        )
        #expect(fault.status == 201, "\(fault.body)")
        let accepted = try await server.call("POST", "/v1/live-activities/\(id)/update", ["content_state": ["step": 2]])
        #expect(accepted.status == 202)
        let delivered = try await server.deliveries(token: device, count: 5)
        #expect(delivered.map { $0["status"] as? Int } == [503, 503, 503, 503, 200])
        #expect(delivered.last?.payload("live-activity")["content-state"] as? [String: Int] == ["step": 2])
        // Herald records APNs' answer after the simulator has answered: wait for it.
        var statuses: [Int?] = []
        try await eventually("the 200 recorded", timeout: .seconds(30)) {
            let recorded =
                try await server.call("GET", "/v1/live-activities/\(id)").body["deliveries"] as? [[String: Any]]
            statuses = recorded?.filter { $0["route"] as? String == "silent" }.map { $0["status"] as? Int } ?? []
            return statuses.first == 200
        }
        #expect(statuses == [200, 503])
        try await server.stop()
    }

    @Test(
        "tags and all audiences read the push-to-start tokens of the registered devices' users",
        arguments: ServeLiveActivitiesTests.backends
    )
    func tagAudiences(backend: Backend) async throws {
        let database = try await LiveActivityServer.database(backend)
        defer { Task { await database.remove() } }
        let server = try await LiveActivityServer.start(databaseURL: database.url)
        let devices: [(user: String, tags: [String])] = [("t1", ["fr", "beta"]), ("t2", ["fr"]), ("t3", [])]
        for (index, device) in devices.enumerated() {
            let token = String(format: "%064x", 100 + index)
            let registered = try await server.call(
                "PUT",
                "/v1/devices/\(token)",
                ["user_id": device.user, "tags": device.tags]
            )
            #expect(registered.status == 201, "\(registered.body)")
            try await server.call(
                "PUT",
                "/v1/users/\(device.user)/push-to-start-tokens",
                ["attributes_type": "OrderAttributes", "token": String(format: "%064x", 200 + index)]
            )
        }
        let cases: [([String: Any], [String])] = [
            (["tags": ["any": ["fr"]]], ["t1", "t2"]),
            (["tags": ["all": ["fr", "beta"]]], ["t1"]),
            (["all": true], ["t1", "t2", "t3"]),
        ]
        for (audience, users) in cases {
            var body = Self.create
            body["audience"] = audience
            let (status, created) = try await server.call("POST", "/v1/live-activities", body)
            #expect(status == 201, "\(audience): \(created)")
            let started = try await server.activity(try #require(created["id"] as? String), state: "started")
            #expect(started["users"] as? [String] == users, "\(audience)")
            let starts = (started["deliveries"] as? [[String: Any]] ?? []).filter { $0["status"] as? Int == 200 }
            #expect(starts.count == users.count, "\(audience)")
        }
        var nobody = Self.create
        nobody["audience"] = ["tags": ["any": ["nl"]]]
        #expect(try await server.call("POST", "/v1/live-activities", nobody).status == 422)
        try await server.stop()
    }
}
