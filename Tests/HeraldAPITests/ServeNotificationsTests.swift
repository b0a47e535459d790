import AsyncTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `herald serve --simulator` end to end: a notification posted to /v1 reaches the simulator.
@Suite("herald serve: notifications")
struct ServeNotificationsTests {
    @Test("a notification posted to /v1 reaches the simulator; refusals are logged with their error code")
    func simulatorModeSendsANotificationPostedToV1() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-notif-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = "serve-test-key-0123456789"
        let herald = try HeraldProcess(
            arguments: ["serve", "--simulator", "--host", "127.0.0.1", "--port", "0"],
            environment: [
                "DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite", "TOPIC": "org.example.notify",
                "HERALD_API_KEYS": key,
            ]
        )
        let port = try await herald.listeningPort()
        let base = "http://127.0.0.1:\(port)"
        let token = String(repeating: "ef", count: 32)
        var request = URLRequest(url: URL(string: "\(base)/v1/notifications?wait=true")!)
        request.httpMethod = "POST"
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(#"{"tokens":["\#(token)"],"payload":{"aps":{"alert":"Hi"}}}"#.utf8)
        let (data, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        let body = String(decoding: data, as: UTF8.self)
        #expect(body.contains("\"status\":\"done\""))
        #expect(body.contains("\"sent\":1"))
        let deliveries = try await fetch(
            "\(base)/simulator/deliveries?token=\(token)",
            headers: ["Authorization": "Bearer \(key)"]
        ).body
        #expect(deliveries.contains("\"topic\":\"org.example.notify\""))
        #expect(!herald.log.contains(key), "the API key must not be logged")

        // Refusals: each is one access-log line with its error code, without the key or the token.
        let refusals: [(query: String, contentType: String, body: String, status: Int, code: String)] = [
            ("?dry_run=true", "application/json", #"{"tokens":["\#(token)"],"payload":{}}"#, 400, "unknown_parameter"),
            ("", "text/plain", #"{"tokens":["\#(token)"],"payload":{}}"#, 415, "unsupported_media_type"),
            ("", "application/json", #"{"tokens":["\#(token)"],"payload":{},}"#, 400, "invalid_json"),
            ("", "application/json", #"{"tokens":["\#(token)"],"tokens":[]}"#, 400, "duplicate_key"),
        ]
        for refusal in refusals {
            var refused = URLRequest(url: URL(string: "\(base)/v1/notifications\(refusal.query)")!)
            refused.httpMethod = "POST"
            refused.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
            refused.setValue(refusal.contentType, forHTTPHeaderField: "Content-Type")
            refused.httpBody = Data(refusal.body.utf8)
            let (_, answer) = try await URLSession.shared.data(for: refused)
            #expect((answer as? HTTPURLResponse)?.statusCode == refusal.status, "\(refusal.code)")
        }
        try await eventually("the refusals to be logged", timeout: .seconds(10)) {
            herald.log.contains("error_code=duplicate_key")
        }
        let lines = herald.log.split(separator: "\n").filter { $0.contains("error_code=") }
        #expect(lines.count == refusals.count, "\(lines)")
        for refusal in refusals {
            #expect(
                lines.contains { $0.contains("error_code=\(refusal.code)") && $0.contains("status=\(refusal.status)") },
                "\(refusal.code): \(lines)"
            )
        }
        #expect(!herald.log.contains(key), "the API key must not be logged")
        #expect(!herald.log.contains(token), "a whole device token must not be logged")
        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit(timeout: .seconds(10)) == 0, "log:\n\(herald.log)")
    }
}
