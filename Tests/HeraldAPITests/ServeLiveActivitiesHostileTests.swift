import AsyncTestSupport
import DatabaseTestSupport
import Foundation
import Testing

/// `herald serve --simulator` against a holder of a client token who tries what issue 33 lists:
/// reporting instances of activities never sent to them, taking over another user's instance,
/// attaching instances without bound, registering push-to-start tokens without bound; and the
/// backend's instance route under the same rules.
@Suite("herald serve: Live Activities against a hostile client", .serialized)
struct ServeLiveActivitiesHostileTests {
    static let type = "RideAttributes"

    static func create(_ audience: [String: Any]) -> [String: Any] {
        [
            "attributes_type": type, "content_state": ["eta": 10],
            "alert": ["title": "Ride", "body": "On its way"], "audience": audience,
        ]
    }

    static func token(_ n: Int) -> String { String(format: "%064x", n) }

    /// The raw answer (status and body text) of a call with `token`.
    static func raw(
        _ server: LiveActivityServer,
        _ method: String,
        _ path: String,
        _ body: [String: Any],
        token: String
    ) async throws -> (status: Int, body: String) {
        try await fetch(
            server.base + path,
            method: method,
            headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
            body: String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        )
    }

    @Test(
        "a user the activity was not sent to (tokens, tags, all audiences) gets the unknown id's 404 and no update",
        arguments: ServeLiveActivitiesTests.backends
    )
    func strangers(backend: Backend) async throws {
        let database = try await LiveActivityServer.database(backend)
        defer { Task { await database.remove() } }
        let server = try await LiveActivityServer.start(databaseURL: database.url)
        // The owner has a tagged device and a push-to-start token; mallory has a device of her own
        // (so `all` resolves her) but no push-to-start token: no activity is ever sent to her.
        for (n, user, tags) in [(1, "owner", ["vip"]), (2, "mallory", [String]())] {
            let device = try await server.call("PUT", "/v1/devices/\(Self.token(n))", ["user_id": user, "tags": tags])
            #expect(device.status == 201, "\(device.body)")
        }
        let pushToStart = Self.token(100)
        let registered = try await server.call(
            "PUT",
            "/v1/users/owner/push-to-start-tokens",
            ["attributes_type": Self.type, "token": pushToStart]
        )
        #expect(registered.status == 201)
        let owner = try await LiveActivityServer.clientToken("owner")
        let mallory = try await LiveActivityServer.clientToken("mallory")
        let malloryDevice = Self.token(2)
        let audiences: [[String: Any]] = [["tokens": [pushToStart]], ["tags": ["any": ["vip"]]], ["all": true]]
        for (index, audience) in audiences.enumerated() {
            let (status, created) = try await server.call("POST", "/v1/live-activities", Self.create(audience))
            #expect(status == 201, "\(audience): \(created)")
            let id = try #require(created["id"] as? String)
            let started = try await server.activity(id, state: "started")
            #expect(started["users"] as? [String] == ["owner"], "\(audience)")

            let report: [String: Any] = ["activity_id": "ios-m\(index)", "device_token": malloryDevice]
            let refused = try await Self.raw(
                server,
                "POST",
                "/v1/client/live-activities/\(id)/instances",
                report,
                token: mallory
            )
            let unknown = try await Self.raw(
                server,
                "POST",
                "/v1/client/live-activities/\(UUID().uuidString)/instances",
                report,
                token: mallory
            )
            #expect(refused.status == 404, "\(audience): \(refused.body)")
            #expect(refused.body == unknown.body, "\(audience): the same answer as for an unknown id")
            #expect(refused.body.contains(#""code":"not_found""#), "\(refused.body)")

            let mine = try await server.call(
                "POST",
                "/v1/client/live-activities/\(id)/instances",
                ["activity_id": "ios-o\(index)", "device_token": Self.token(1)],
                token: owner
            )
            #expect(mine.status == 201, "\(audience): \(mine.body)")
            let instances =
                try await server.call("GET", "/v1/live-activities/\(id)").body["instances"] as? [[String: Any]]
            #expect(instances?.map { $0["user_id"] as? String } == ["owner"], "\(audience)")
            let update = try await server.call(
                "POST",
                "/v1/live-activities/\(id)/update",
                ["content_state": ["eta": 5]]
            )
            #expect(update.status == 202)
            _ = try await server.deliveries(token: Self.token(1), count: index + 1)
        }
        #expect(try await server.deliveries(token: malloryDevice).isEmpty, "mallory's device received nothing")
        try await server.stop()
    }

    @Test(
        "a member re-reporting another member's instance gets 403 not_your_instance; the instance keeps its owner",
        arguments: ServeLiveActivitiesTests.backends
    )
    func takeover(backend: Backend) async throws {
        let database = try await LiveActivityServer.database(backend)
        defer { Task { await database.remove() } }
        let server = try await LiveActivityServer.start(databaseURL: database.url)
        try await server.call(
            "PUT",
            "/v1/users/u1/push-to-start-tokens",
            ["attributes_type": Self.type, "token": Self.token(100)]
        )
        let (_, created) = try await server.call("POST", "/v1/live-activities", Self.create(["users": ["u1", "u2"]]))
        let id = try #require(created["id"] as? String)
        _ = try await server.activity(id, state: "started")
        let path = "/v1/client/live-activities/\(id)/instances"
        let first = try await server.call(
            "POST",
            path,
            ["activity_id": "ios-1", "device_token": Self.token(1), "update_token": Self.token(11)],
            token: try await LiveActivityServer.clientToken("u1")
        )
        #expect(first.status == 201)
        let taken = try await server.call(
            "POST",
            path,
            ["activity_id": "ios-1", "device_token": Self.token(2), "update_token": Self.token(22)],
            token: try await LiveActivityServer.clientToken("u2")
        )
        #expect(taken.status == 403, "\(taken.body)")
        #expect((taken.body["error"] as? [String: Any])?["code"] as? String == "not_your_instance")
        // Through the backend's route too.
        let backend = try await server.call(
            "POST",
            "/v1/live-activities/\(id)/instances",
            ["user_id": "u2", "activity_id": "ios-1", "device_token": Self.token(2)]
        )
        #expect(backend.status == 403, "\(backend.body)")

        let instances = try await server.call("GET", "/v1/live-activities/\(id)").body["instances"] as? [[String: Any]]
        #expect(instances?.count == 1)
        #expect(instances?.first?["user_id"] as? String == "u1")
        #expect(instances?.first?["device_token_prefix"] as? String == String(Self.token(1).prefix(8)))
        #expect(instances?.first?["update_token_prefix"] as? String == String(Self.token(11).prefix(8)))
        // Updates go to the owner's update token; u2's tokens get nothing.
        #expect(
            try await server.call("POST", "/v1/live-activities/\(id)/update", ["content_state": ["eta": 3]]).status
                == 202
        )
        _ = try await server.deliveries(token: Self.token(11), count: 1)
        #expect(try await server.deliveries(token: Self.token(2)).isEmpty)
        #expect(try await server.deliveries(token: Self.token(22)).isEmpty)
        try await server.stop()
    }

    @Test(
        "the 11th instance of one user is 409 too_many_instances, on the client and the backend route",
        arguments: ServeLiveActivitiesTests.backends
    )
    func instanceQuota(backend: Backend) async throws {
        let database = try await LiveActivityServer.database(backend)
        defer { Task { await database.remove() } }
        let server = try await LiveActivityServer.start(databaseURL: database.url)
        try await server.call(
            "PUT",
            "/v1/users/u1/push-to-start-tokens",
            ["attributes_type": Self.type, "token": Self.token(100)]
        )
        let (_, created) = try await server.call("POST", "/v1/live-activities", Self.create(["users": ["u1", "u2"]]))
        let id = try #require(created["id"] as? String)
        let u1 = try await LiveActivityServer.clientToken("u1")
        let path = "/v1/client/live-activities/\(id)/instances"
        for n in 1...10 {
            let report = try await server.call("POST", path, ["activity_id": "ios-\(n)"], token: u1)
            #expect(report.status == 201, "\(n): \(report.body)")
        }
        let eleventh = try await server.call("POST", path, ["activity_id": "ios-11"], token: u1)
        #expect(eleventh.status == 409, "\(eleventh.body)")
        #expect((eleventh.body["error"] as? [String: Any])?["code"] as? String == "too_many_instances")
        #expect(
            try await server.call("POST", path, ["activity_id": "ios-3", "state": "ended"], token: u1).status == 200
        )

        // The backend's route: the same rules for the user it names.
        let backendPath = "/v1/live-activities/\(id)/instances"
        let overQuota = try await server.call("POST", backendPath, ["user_id": "u1", "activity_id": "ios-12"])
        #expect(overQuota.status == 409, "\(overQuota.body)")
        let stranger = try await server.call("POST", backendPath, ["user_id": "u3", "activity_id": "ios-13"])
        #expect(stranger.status == 404, "\(stranger.body)")
        let missing = try await server.call("POST", backendPath, ["activity_id": "ios-13"])
        #expect(missing.status == 400, "\(missing.body)")
        #expect((missing.body["error"] as? [String: Any])?["field"] as? String == "user_id")
        let u2 = try await server.call(
            "POST",
            backendPath,
            ["user_id": "u2", "activity_id": "ios-u2", "device_token": Self.token(5)]
        )
        #expect(u2.status == 201, "\(u2.body)")
        #expect(u2.body["user_id"] as? String == "u2")
        let again = try await server.call("POST", backendPath, ["user_id": "u2", "activity_id": "ios-u2"])
        #expect(again.status == 200)
        let noKey = try await server.call(
            "POST",
            backendPath,
            ["user_id": "u2", "activity_id": "ios-u3"],
            token: try await LiveActivityServer.clientToken("u2")
        )
        #expect(noKey.status == 401, "a client token is not the API key: \(noKey.body)")
        let instances = try await server.call("GET", "/v1/live-activities/\(id)").body["instances"] as? [[String: Any]]
        #expect(instances?.filter { $0["user_id"] as? String == "u1" }.count == 10)
        try await server.stop()
    }

    @Test(
        "the 21st push-to-start token of a user evicts the least recently registered; another user's token answers as a new one",
        arguments: ServeLiveActivitiesTests.backends
    )
    func pushToStartQuota(backend: Backend) async throws {
        let database = try await LiveActivityServer.database(backend)
        defer { Task { await database.remove() } }
        let server = try await LiveActivityServer.start(databaseURL: database.url)
        let u1 = try await LiveActivityServer.clientToken("u1")
        for n in 1...21 {
            let put = try await server.call(
                "PUT",
                "/v1/client/push-to-start-tokens",
                ["attributes_type": n % 2 == 0 ? "OtherAttributes" : Self.type, "token": Self.token(n)],
                token: u1
            )
            #expect(put.status == 201, "\(n): \(put.body)")
            #expect(put.body["status"] as? String == "active")
        }
        // Token 1 was evicted: a tokens audience of it alone has nothing to start with.
        let evicted = try await server.call("POST", "/v1/live-activities", Self.create(["tokens": [Self.token(1)]]))
        #expect(evicted.status == 422, "\(evicted.body)")
        // The user's activity goes to the 10 live tokens of its type, not to token 1.
        let (_, created) = try await server.call("POST", "/v1/live-activities", Self.create(["users": ["u1"]]))
        let id = try #require(created["id"] as? String)
        let started = try await server.activity(id, state: "started")
        let starts = (started["deliveries"] as? [[String: Any]] ?? []).filter { $0["event"] as? String == "start" }
        #expect(starts.count == 10, "\(starts)")
        #expect(try await server.deliveries(token: Self.token(1)).isEmpty)

        // Another user registering u1's token gets 201, as for an unknown token, and takes it.
        let u2 = try await LiveActivityServer.clientToken("u2")
        let taken = try await server.call(
            "PUT",
            "/v1/client/push-to-start-tokens",
            ["attributes_type": Self.type, "token": Self.token(3)],
            token: u2
        )
        #expect(taken.status == 201, "\(taken.body)")
        let fresh = try await server.call(
            "PUT",
            "/v1/client/push-to-start-tokens",
            ["attributes_type": Self.type, "token": Self.token(999)],
            token: u2
        )
        #expect(fresh.status == 201)
        // The evicted token registered again by its user is active again.
        let back = try await server.call(
            "PUT",
            "/v1/client/push-to-start-tokens",
            ["attributes_type": Self.type, "token": Self.token(1)],
            token: u1
        )
        #expect(back.status == 200, "\(back.body)")
        #expect(back.body["status"] as? String == "active")
        try await server.stop()
    }
}
