import APNsSimulator
import DatabaseTestSupport
import Foundation
import Testing

/// `/v1/devices` over the real HTTP server, and the registry seen through a notification sent to
/// the simulator over HTTP/2 + TLS.
@Suite("Devices API over HTTP")
struct DeviceAPITests {
    typealias API = NotificationAPITests

    static func token(_ n: Int) -> String {
        String(format: "%064x", n)
    }

    static let fields: Set<String> = [
        "token", "app", "environment", "user_id", "tags", "locale", "timezone", "app_version", "platform", "status",
        "invalid_reason", "invalid_at", "created_at", "updated_at", "last_registered_at",
    ]

    @Test(
        "PUT creates (201) then updates (200) with every field; GET reads, DELETE is 204, then 404",
        arguments: Backend.allCases
    )
    func lifecycle(backend: Backend) async throws {
        try await API.with(backend) { harness in
            let path = "/v1/devices/\(Self.token(1).uppercased())"
            let body: [String: Any] = [
                "user_id": "u1", "tags": ["news", "sports"], "locale": "en_GB", "timezone": "Europe/London",
                "app_version": "3.1", "platform": "ios",
            ]
            let created = try await harness.request("PUT", path, json: body)
            #expect(created.status == 201)
            #expect(Set(created.json.keys) == Self.fields)
            #expect(created.json["token"] as? String == Self.token(1))
            #expect(created.json["app"] as? String == API.topic)
            #expect(created.json["environment"] as? String == "production")
            #expect(created.json["tags"] as? [String] == ["news", "sports"])
            #expect(created.json["status"] as? String == "active")
            #expect(created.json["invalid_at"] is NSNull)
            #expect(created.json["last_registered_at"] is String)

            let updated = try await harness.request("PUT", path, json: ["user_id": "u2"])
            #expect(updated.status == 200)
            #expect(updated.json["user_id"] as? String == "u2")
            #expect(updated.json["tags"] as? [String] == [])
            #expect(updated.json["timezone"] is NSNull)

            let read = try await harness.request("GET", "/v1/devices/\(Self.token(1))?environment=production")
            #expect(read.status == 200)
            #expect(read.json["user_id"] as? String == "u2")
            let other = try await harness.request("GET", "/v1/devices/\(Self.token(1))?environment=sandbox")
            #expect(other.status == 404)
            #expect(API.error(other.json)?["code"] as? String == "not_found")

            let deleted = try await harness.request("DELETE", "/v1/devices/\(Self.token(1))")
            #expect(deleted.status == 204)
            #expect(try await harness.request("GET", "/v1/devices/\(Self.token(1))").status == 404)
            #expect(try await harness.request("DELETE", "/v1/devices/\(Self.token(1))").status == 404)
        }
    }

    @Test("refusals say what to fix: key, token, body fields, query parameters")
    func refusals() async throws {
        try await API.with(.sqliteMemory) { harness in
            let path = "/v1/devices/\(Self.token(1))"
            #expect(try await harness.request("PUT", path, json: [:], key: nil).status == 401)
            #expect(try await harness.request("GET", "/v1/devices", key: nil).status == 401)
            let cases: [(String, String, [String: Any]?, String, String?)] = [
                ("PUT", "/v1/devices/xyz", [:], "invalid_token", "token"),
                ("PUT", path, ["tags": Array(repeating: "t", count: 51)], "too_many_tags", "tags"),
                ("PUT", path, ["timezone": "Nowhere/Land"], "invalid_timezone", "timezone"),
                ("PUT", path, ["platform": "android"], "invalid_platform", "platform"),
                ("PUT", path, ["app": "com.example.unknown"], "unknown_app", "app"),
                ("PUT", path, ["colour": "red"], "unknown_field", "colour"),
                ("GET", "/v1/devices?limit=0", nil, "invalid_limit", "limit"),
                ("GET", "/v1/devices?limit=1001", nil, "invalid_limit", "limit"),
                ("GET", "/v1/devices?status=dead", nil, "invalid_status", "status"),
                ("GET", "/v1/devices?cursor=nope", nil, "invalid_cursor", "cursor"),
                ("GET", "/v1/devices?page=2", nil, "unknown_parameter", "page"),
                ("GET", "\(path)?user_id=u1", nil, "unknown_parameter", "user_id"),
                ("POST", "/v1/devices/batch", ["devices": []], "invalid_devices", "devices"),
            ]
            for (method, path, body, code, field) in cases {
                let response = try await harness.request(method, path, json: body)
                #expect(response.status == 400, "\(method) \(path)")
                #expect(API.error(response.json)?["code"] as? String == code, "\(method) \(path)")
                #expect(API.error(response.json)?["field"] as? String == field, "\(method) \(path)")
            }
        }
    }

    @Test("GET /v1/devices filters and pages; POST /v1/devices/batch answers per device", arguments: Backend.allCases)
    func listAndBatch(backend: Backend) async throws {
        try await API.with(backend) { harness in
            var devices: [[String: Any]] = (1...12).map {
                ["token": Self.token($0), "user_id": $0 <= 4 ? "alice" : "bob", "tags": $0 % 3 == 0 ? ["vip"] : []]
            }
            devices.append(["token": Self.token(13), "timezone": "Mars/Base"])
            let batch = try await harness.request("POST", "/v1/devices/batch", json: ["devices": devices])
            #expect(batch.status == 200)
            #expect(batch.json["created"] as? Int == 12)
            #expect(batch.json["failed"] as? Int == 1)
            let results = try #require(batch.json["results"] as? [[String: Any]])
            #expect(results.count == 13)
            #expect(results[0]["status"] as? Int == 201)
            #expect((results[0]["device"] as? [String: Any])?["user_id"] as? String == "alice")
            #expect(results[12]["status"] as? Int == 400)
            #expect((results[12]["error"] as? [String: Any])?["field"] as? String == "devices[12].timezone")

            let again = try await harness.request("POST", "/v1/devices/batch", json: ["devices": [devices[0]]])
            #expect((again.json["results"] as? [[String: Any]])?.first?["status"] as? Int == 200)

            var seen: [String] = []
            var cursor: String?
            repeat {
                let query = "/v1/devices?user_id=bob&limit=3" + (cursor.map { "&cursor=\($0)" } ?? "")
                let page = try await harness.request("GET", query)
                #expect(page.status == 200)
                let items = try #require(page.json["devices"] as? [[String: Any]])
                seen += items.compactMap { $0["token"] as? String }
                cursor = page.json["next_cursor"] as? String
            } while cursor != nil
            #expect(seen == (5...12).map(Self.token))

            let vip = try await harness.request("GET", "/v1/devices?tag=vip&status=active&environment=production")
            #expect(
                (vip.json["devices"] as? [[String: Any]])?.compactMap { $0["token"] as? String }
                    == [3, 6, 9, 12].map(Self.token)
            )
        }
    }

    @Test(
        "a notification answered 410 leaves a device registered before T invalid, one registered after T active",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func deadTokenEndToEnd(backend: Backend) async throws {
        try await API.with(backend) { harness in
            // The server stamps registrations with its clock (now): T a day later is after the
            // registration, T a day earlier before it.
            let later = Date().addingTimeInterval(86_400)
            let earlier = Date().addingTimeInterval(-86_400)
            for n in 1...3 {
                #expect(
                    try await harness.request("PUT", "/v1/devices/\(Self.token(n))", json: ["tags": ["t"]]).status
                        == 201
                )
            }
            harness.simulator.setToken(APNSSimulatorTokenState(token: Self.token(1), unregisteredAt: later))
            harness.simulator.setToken(APNSSimulatorTokenState(token: Self.token(2), unregisteredAt: earlier))
            harness.simulator.setToken(APNSSimulatorTokenState(token: Self.token(3), topic: "com.example.other"))
            let sent = try await harness.request(
                "POST",
                "/v1/notifications?wait=true",
                json: ["tokens": (1...3).map(Self.token), "payload": ["aps": ["alert": "Hi"]]]
            )
            #expect(sent.status == 200)
            let results = try #require(sent.json["results"] as? [[String: Any]])
            #expect(results.map { $0["status"] as? String } == ["dead", "dead", "dead"])

            let first = try await harness.request("GET", "/v1/devices/\(Self.token(1))")
            #expect(first.json["status"] as? String == "invalid")
            #expect(first.json["invalid_reason"] as? String == "Unregistered")
            #expect(first.json["invalid_at"] as? String == results[0]["invalid_at"] as? String)
            let second = try await harness.request("GET", "/v1/devices/\(Self.token(2))")
            #expect(second.json["status"] as? String == "active")
            let third = try await harness.request("GET", "/v1/devices/\(Self.token(3))")
            #expect(third.json["status"] as? String == "invalid")
            #expect(third.json["invalid_reason"] as? String == "DeviceTokenNotForTopic")

            // A registration stamped before T (now is before T) is a stale retry: still invalid.
            let retry = try await harness.request("PUT", "/v1/devices/\(Self.token(1))", json: ["tags": ["t"]])
            #expect(retry.status == 200)
            #expect(retry.json["status"] as? String == "invalid")

            let dead = try await harness.request("GET", "/v1/dead-tokens")
            let listed = try #require(dead.json["dead_tokens"] as? [[String: Any]])
            #expect(Set(listed.compactMap { $0["token"] as? String }) == [Self.token(1), Self.token(3)])
            let active = try await harness.request("GET", "/v1/devices?status=active")
            #expect(
                (active.json["devices"] as? [[String: Any]])?.compactMap { $0["token"] as? String } == [Self.token(2)]
            )
        }
    }
}
