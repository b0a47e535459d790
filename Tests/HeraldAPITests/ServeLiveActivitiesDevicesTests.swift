import AsyncTestSupport
import DatabaseTestSupport
import Foundation
import Testing

/// `herald serve --simulator` end to end against the simulator's virtual devices, over HTTP/2 +
/// TLS, on SQLite and PostgreSQL: what the Lock Screen shows as the backend starts, updates and
/// ends an activity and the app reports it, before and after the user taps Allow.
@Suite("herald serve: Live Activities on the simulator's virtual devices", .serialized)
struct ServeLiveActivitiesDevicesTests {
    static let attributesType = "LoanAttributes"

    /// The backend's body for a loan activity of `u1`, the same in every test.
    static var create: [String: Any] {
        [
            "attributes_type": attributesType, "attributes": ["product": "Credit card"],
            "content_state": ["step": 1],
            "alert": ["title": "Application started", "body": "We are checking your data"],
            "audience": ["users": ["u1"]],
        ]
    }

    /// Registers `pushToStart` for `u1` as the app would, creates the activity and waits until the
    /// virtual device `pushToStart` shows it; returns Herald's id and the activity shown.
    func start(
        _ server: LiveActivityServer,
        pushToStart: String,
        client: String
    ) async throws -> (id: String, shown: [String: Any]) {
        let registered = try await server.call(
            "PUT",
            "/v1/client/push-to-start-tokens",
            ["attributes_type": Self.attributesType, "token": pushToStart],
            token: client
        )
        #expect(registered.status == 201, "\(registered.body)")
        let created = try await server.call("POST", "/v1/live-activities", Self.create)
        #expect(created.status == 201, "\(created.body)")
        let id = try #require(created.body["id"] as? String)
        let shown = try await server.virtualActivity(on: pushToStart, "the push-to-start") { _ in true }
        _ = try await server.activity(id, state: "started")
        return (id, shown)
    }

    @Test(
        "a started activity shows on the virtual device, is updated by silent push before Allow and by its update token after, and ends",
        arguments: ServeLiveActivitiesTests.backends
    )
    func silentThenUpdateToken(backend: Backend) async throws {
        let database = try await LiveActivityServer.database(backend)
        defer { Task { await database.remove() } }
        let server = try await LiveActivityServer.start(databaseURL: database.url)
        let u1 = try await LiveActivityServer.clientToken("u1")
        let pushToStart = String(repeating: "c1", count: 32)
        let device = String(repeating: "c2", count: 32)

        // The Lock Screen shows it, not allowed yet, with Herald's id in heraldID and the first step.
        let (id, shown) = try await start(server, pushToStart: pushToStart, client: u1)
        #expect(shown["allowed"] as? Bool == false)
        #expect(shown["input_push_token"] as? Bool == true)
        #expect(shown["update_token"] is NSNull)
        #expect(shown["state"] as? String == "active")
        #expect(shown["attributes_type"] as? String == Self.attributesType)
        let attributes = try #require(shown["attributes"] as? [String: Any])
        #expect(attributes["heraldID"] as? String == id)
        #expect(attributes["product"] as? String == "Credit card")
        #expect(shown.contentStep == 1)
        let iosID = try #require(shown["activity_id"] as? String)

        // The app reports what it reads on the device: the iOS id and its device token, no update token.
        let instancePath = "/v1/client/live-activities/\(id)/instances"
        let reported = try await server.call(
            "POST",
            instancePath,
            ["activity_id": iosID, "device_token": device],
            token: u1
        )
        #expect(reported.status == 201, "\(reported.body)")

        // The backend's one call, the same before and after Allow.
        func update(_ step: Int) async throws -> [String: Int]? {
            let answer = try await server.call(
                "POST",
                "/v1/live-activities/\(id)/update",
                ["content_state": ["step": step]]
            )
            #expect(answer.status == 202, "\(answer.body)")
            return answer.body["routes"] as? [String: Int]
        }

        // Before Allow: the silent push, applied by the app's code, moves the activity to step 2.
        #expect(try await update(2) == ["broadcast": 0, "update_token": 0, "silent": 1, "pending": 0])
        let silent = try await server.virtualActivity(on: pushToStart, "step 2") { $0.contentStep == 2 }
        #expect(silent.changeRoutes.last == "silent")
        #expect(silent["allowed"] as? Bool == false)

        // The user taps Allow: iOS issues an update token, and the app reports it on its instance.
        let allowed = try await server.call(
            "POST",
            "/simulator/devices/\(pushToStart)/activities/\(iosID)/allow"
        )
        #expect(allowed.status == 200, "\(allowed.body)")
        #expect(allowed.body["allowed"] as? Bool == true)
        let updateToken = try #require(allowed.body["update_token"] as? String)
        let withToken = try await server.call(
            "POST",
            instancePath,
            ["activity_id": iosID, "update_token": updateToken],
            token: u1
        )
        #expect(withToken.status == 200, "\(withToken.body)")

        // After Allow: the same call reaches the activity by its update token.
        #expect(try await update(3) == ["broadcast": 0, "update_token": 1, "silent": 0, "pending": 0])
        let viaToken = try await server.virtualActivity(on: pushToStart, "step 3") { $0.contentStep == 3 }
        #expect(viaToken.changeRoutes.last == "update_token")
        var delivery: [String: Any] = [:]
        try await eventually("the update-token delivery recorded", timeout: .seconds(30)) {
            let details = try await server.call("GET", "/v1/live-activities/\(id)").body
            delivery = (details["deliveries"] as? [[String: Any]])?.first ?? [:]
            return delivery["route"] as? String == "update_token"
        }
        #expect(delivery["status"] as? Int == 200)
        #expect(delivery["event"] as? String == "update")
        #expect(delivery["token_prefix"] as? String == String(updateToken.prefix(8)))

        // The end reaches it by its update token too, with its final content.
        let end = try await server.call("POST", "/v1/live-activities/\(id)/end", ["content_state": ["step": 4]])
        #expect(end.status == 202, "\(end.body)")
        #expect(end.body["routes"] as? [String: Int] == ["broadcast": 0, "update_token": 1, "silent": 0, "pending": 0])
        let ended = try await server.virtualActivity(on: pushToStart, "the end") { $0["state"] as? String != "active" }
        #expect(ended["state"] as? String == "ended")
        #expect(ended.contentStep == 4)
        #expect(ended.changeRoutes == ["push_to_start", "silent", "user", "update_token", "update_token"])
        #expect(ended.changes.allSatisfy { $0["applied"] as? Bool == true }, "\(ended.changes)")
        #expect(try await server.call("GET", "/v1/live-activities/\(id)").body["state"] as? String == "ended")
        try await server.stop()
    }

    @Test(
        "an update sent before any instance registered reaches the virtual device when the app reports its instance",
        arguments: ServeLiveActivitiesTests.backends
    )
    func pendingUntilRegistered(backend: Backend) async throws {
        let database = try await LiveActivityServer.database(backend)
        defer { Task { await database.remove() } }
        let server = try await LiveActivityServer.start(databaseURL: database.url)
        let u1 = try await LiveActivityServer.clientToken("u1")
        let pushToStart = String(repeating: "c3", count: 32)
        let device = String(repeating: "c4", count: 32)
        let (id, shown) = try await start(server, pushToStart: pushToStart, client: u1)
        let iosID = try #require(shown["activity_id"] as? String)

        let pending = try await server.call("POST", "/v1/live-activities/\(id)/update", ["content_state": ["step": 2]])
        #expect(pending.status == 202, "\(pending.body)")
        #expect(
            pending.body["routes"] as? [String: Int] == ["broadcast": 0, "update_token": 0, "silent": 0, "pending": 1]
        )
        // Its job runs and finds nobody to send to: the update is kept, the Lock Screen still shows
        // step 1. (Waiting for the job keeps it from racing the registration's own job below.)
        try await eventually("the update's send job finished", timeout: .seconds(30)) {
            try await server.finishedJobs(kind: "live_activity.send") >= 1
        }
        let details = try await server.call("GET", "/v1/live-activities/\(id)").body
        #expect((details["instances"] as? [Any])?.isEmpty == true, "\(details)")
        #expect(try await server.virtualActivity(on: pushToStart, "step 1") { _ in true }.contentStep == 1)

        let reported = try await server.call(
            "POST",
            "/v1/client/live-activities/\(id)/instances",
            ["activity_id": iosID, "device_token": device],
            token: u1
        )
        #expect(reported.status == 201, "\(reported.body)")
        let updated = try await server.virtualActivity(on: pushToStart, "step 2") { $0.contentStep == 2 }
        #expect(updated.changeRoutes == ["push_to_start", "silent"])
        #expect(updated.changes.last?["applied"] as? Bool == true)
        try await server.stop()
    }
}

extension LiveActivityServer {
    /// Waits until the virtual device `token` shows one activity that `matches`, read through the
    /// simulator's control API (`GET /simulator/devices/{token}/activities`), and returns it.
    func virtualActivity(
        on token: String,
        _ what: String,
        sourceLocation: SourceLocation = #_sourceLocation,
        matches: ([String: Any]) -> Bool
    ) async throws -> [String: Any] {
        var found: [String: Any] = [:]
        try await eventually(
            "the virtual device \(token.prefix(8)) shows \(what)",
            timeout: .seconds(30),
            sourceLocation: sourceLocation
        ) {
            let (status, body) = try await call("GET", "/simulator/devices/\(token)/activities")
            let activities = body["activities"] as? [[String: Any]] ?? []
            guard status == 200, activities.count == 1, let activity = activities.first else { return false }
            found = activity
            return matches(activity)
        }
        return found
    }

    /// How many jobs of `kind` this process finished, from `herald_jobs_duration_seconds_count`
    /// in `/metrics` (observed once the job's outcome is committed).
    func finishedJobs(kind: String) async throws -> Int {
        let metrics = try await fetch(base + "/metrics").body
        let prefix = "herald_jobs_duration_seconds_count{kind=\"\(kind)\"} "
        let line = metrics.split(separator: "\n").first { $0.hasPrefix(prefix) }
        return line.flatMap { Int($0.dropFirst(prefix.count)) } ?? 0
    }
}

extension Dictionary where Key == String, Value == Any {
    /// The `step` of a virtual device activity's content state.
    var contentStep: Int? {
        (self["content_state"] as? [String: Any])?["step"] as? Int
    }

    /// A virtual device activity's changes, oldest first.
    var changes: [[String: Any]] {
        self["changes"] as? [[String: Any]] ?? []
    }

    /// How each change reached a virtual device activity (`via`), oldest first.
    var changeRoutes: [String] {
        changes.compactMap { $0["via"] as? String }
    }
}
