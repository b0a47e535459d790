import AsyncTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `herald serve --simulator` end to end: devices registered through `/v1/devices`, notifications
/// sent to every kind of audience, each device's pushes counted at the simulator.
@Suite("herald serve: audiences")
struct ServeAudienceTests {
    static let key = "serve-audience-key-0123456789"

    struct Server {
        let base: String

        func call(_ method: String, _ path: String, _ body: Any? = nil) async throws -> (Int, [String: Any]) {
            let text = try body.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }
            let answer = try await fetch(
                base + path,
                method: method,
                headers: ["Authorization": "Bearer \(ServeAudienceTests.key)", "Content-Type": "application/json"],
                body: text
            )
            let object = (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [String: Any]
            return (answer.status, object ?? [:])
        }

        /// Posts a notification to `audience` and returns its body once it is finished.
        func send(_ audience: [String: Any]) async throws -> [String: Any] {
            let (status, accepted) = try await call(
                "POST",
                "/v1/notifications",
                ["audience": audience, "payload": ["aps": ["alert": "Hi"]]]
            )
            #expect(status == 202, "\(audience): \(accepted)")
            let id = try #require(accepted["id"] as? String)
            var finished: [String: Any] = [:]
            try await eventually("notification \(id) finished", timeout: .seconds(30)) {
                let (_, body) = try await call("GET", "/v1/notifications/\(id)")
                finished = body
                return ["done", "failed"].contains(body["status"] as? String ?? "")
            }
            return finished
        }

        /// Pushes the simulator received, per token.
        func deliveries() async throws -> [String: Int] {
            let (_, body) = try await call("GET", "/simulator/deliveries?limit=1000")
            var counts: [String: Int] = [:]
            for delivery in body["deliveries"] as? [[String: Any]] ?? [] {
                if let token = delivery["token"] as? String { counts[token, default: 0] += 1 }
            }
            return counts
        }
    }

    @Test("each kind of audience reaches exactly its registered active devices; GET shows audience and progress")
    func everyKind() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-audience-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let herald = try HeraldProcess(
            arguments: ["serve", "--simulator", "--host", "127.0.0.1", "--port", "0"],
            environment: [
                "DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite", "TOPIC": "org.example.audience",
                "HERALD_API_KEYS": Self.key,
            ]
        )
        let server = Server(base: "http://127.0.0.1:\(try await herald.listeningPort())")
        let tokens = (1...5).map { String(format: "%064x", $0) }
        let devices: [(user: String?, tags: [String])] = [
            ("ann", ["beta", "fr"]), ("ann", ["beta"]), ("bob", ["fr"]), ("cy", []), (nil, ["beta", "fr"]),
        ]
        for (token, device) in zip(tokens, devices) {
            var body: [String: Any] = ["tags": device.tags]
            if let user = device.user { body["user_id"] = user }
            let (status, answer) = try await server.call("PUT", "/v1/devices/\(token)", body)
            #expect(status == 201, "\(answer)")
        }

        let cases: [([String: Any], String, [Int])] = [
            (["users": ["ann", "nobody"]], "users", [0, 1]),
            (["tags": ["any": ["beta"]]], "tags_any", [0, 1, 4]),
            (["tags": ["all": ["beta", "fr"]]], "tags_all", [0, 4]),
            (["all": true], "all", [0, 1, 2, 3, 4]),
            (["tokens": [tokens[3]]], "tokens", [3]),
            (["users": ["nobody"]], "users", []),
        ]
        var expected: [String: Int] = [:]
        for (audience, kind, indices) in cases {
            let body = try await server.send(audience)
            #expect(body["status"] as? String == "done", "\(audience): \(body)")
            #expect(body["audience_kind"] as? String == kind)
            let progress = try #require(body["progress"] as? [String: Any])
            #expect(progress["resolved"] as? Int == indices.count, "\(audience): \(progress)")
            #expect(progress["sent"] as? Int == indices.count)
            #expect(progress["pending"] as? Int == 0)
            #expect(progress["failed"] as? Int == 0)
            #expect(progress["resolving"] as? Bool == false)
            if kind != "tokens" {
                let echoed = try #require(body["audience"] as? [String: Any])
                #expect(Set(echoed.keys) == Set(audience.keys))
            }
            let results = body["results"] as? [[String: Any]] ?? []
            #expect(Set(results.compactMap { $0["token"] as? String }) == Set(indices.map { tokens[$0] }))
            for index in indices { expected[tokens[index], default: 0] += 1 }
        }
        #expect(try await server.deliveries() == expected)

        // Both tokens and audience: refused, naming the audience.
        let (status, refusal) = try await server.call(
            "POST",
            "/v1/notifications",
            ["tokens": [tokens[0]], "audience": ["all": true], "payload": ["aps": ["alert": "Hi"]]]
        )
        #expect(status == 400)
        let error = refusal["error"] as? [String: Any]
        #expect(error?["code"] as? String == "tokens_and_audience")
        #expect(error?["field"] as? String == "audience")
        // The list shows each notification's audience kind.
        let (_, list) = try await server.call("GET", "/v1/notifications?limit=10")
        let kinds = (list["notifications"] as? [[String: Any]] ?? []).compactMap { $0["audience_kind"] as? String }
        #expect(kinds.count == cases.count)
        #expect(Set(kinds) == ["users", "tags_any", "tags_all", "all", "tokens"])
    }
}
