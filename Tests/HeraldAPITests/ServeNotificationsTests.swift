import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `herald serve --simulator` end to end: a notification posted to /v1 reaches the simulator.
@Suite("herald serve: notifications")
struct ServeNotificationsTests {
    @Test func simulatorModeSendsANotificationPostedToV1() async throws {
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
        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit(timeout: .seconds(10)) == 0, "log:\n\(herald.log)")
    }
}
