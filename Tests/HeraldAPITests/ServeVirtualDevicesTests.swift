import AsyncTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `herald serve --simulator` end to end: its simulator's virtual devices apply silent
/// `live-activity` pushes, and `/v1/channels` reaches its channel management and broadcasts.
@Suite("herald serve: virtual devices and channels")
struct ServeVirtualDevicesTests {
    static let key = "serve-devices-key-0123456789"
    static let pushToStart = String(repeating: "a1", count: 32)
    static let device = String(repeating: "d4", count: 32)

    struct Server {
        let base: String

        func call(_ method: String, _ path: String, _ body: Any? = nil) async throws -> (Int, [String: Any]) {
            let text = try body.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }
            let answer = try await fetch(
                base + path,
                method: method,
                headers: [
                    "Authorization": "Bearer \(ServeVirtualDevicesTests.key)", "Content-Type": "application/json",
                ],
                body: text
            )
            let object = (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [String: Any]
            return (answer.status, object ?? [:])
        }

        /// Sends a notification and waits until it is finished.
        func push(_ body: [String: Any]) async throws {
            let (status, accepted) = try await call("POST", "/v1/notifications", body)
            #expect(status == 202, "\(accepted)")
            let id = try #require(accepted["id"] as? String)
            try await eventually("notification \(id) finished", timeout: .seconds(30)) {
                let (_, read) = try await call("GET", "/v1/notifications/\(id)")
                return read["status"] as? String == "done"
            }
        }

        func activity() async throws -> [String: Any]? {
            let (_, body) = try await call(
                "GET",
                "/simulator/devices/\(ServeVirtualDevicesTests.pushToStart)/activities"
            )
            return (body["activities"] as? [[String: Any]])?.first
        }
    }

    @Test("a silent live-activity push is applied, and a channel broadcast reaches its subscriber")
    func silentAndBroadcast() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-devices-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let herald = try HeraldProcess(
            arguments: ["serve", "--simulator", "--host", "127.0.0.1", "--port", "0"],
            environment: [
                "DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite", "TOPIC": "org.example.devices",
                "HERALD_API_KEYS": Self.key,
            ]
        )
        let server = Server(base: "http://127.0.0.1:\(try await herald.listeningPort())")
        let (created, channel) = try await server.call("POST", "/v1/channels", ["storage_policy": 0])
        #expect(created == 201, "\(channel)")
        let channelID = try #require(channel["id"] as? String)

        let now = Int(Date().timeIntervalSince1970)
        try await server.push([
            "tokens": [Self.pushToStart], "push_type": "liveactivity",
            "payload": [
                "aps": [
                    "event": "start", "timestamp": now - 10, "attributes-type": "MeetupAttributes",
                    "attributes": ["heraldID": "h-1"], "content-state": ["coming": 1],
                    "alert": ["title": "Meetup", "body": "Soon"], "input-push-channel": channelID,
                ]
            ],
        ])
        let started = try #require(try await server.activity())
        #expect(started["allowed"] as? Bool == false)
        #expect(started["channel_id"] as? String == channelID)
        let activityID = try #require(started["activity_id"] as? String)

        // The silent fallback, to the app's device token: on in herald serve --simulator.
        try await server.push([
            "tokens": [Self.device], "push_type": "background", "priority": 5,
            "payload": [
                "aps": ["content-available": 1],
                "live-activity": [
                    "id": "h-1", "activity-id": activityID, "event": "update", "content-state": ["coming": 2],
                    "timestamp": now - 5,
                ],
            ],
        ])
        let silent = try #require(try await server.activity())
        #expect(silent["content_state"] as? [String: Int] == ["coming": 2])

        let (status, sent) = try await server.call(
            "POST",
            "/v1/channels/\(channelID.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_"))/broadcast",
            ["event": "update", "content_state": ["coming": 3]]
        )
        #expect(status == 200, "\(sent)")
        let broadcast = try #require(try await server.activity())
        #expect(broadcast["content_state"] as? [String: Int] == ["coming": 3])
        let routes = (broadcast["changes"] as? [[String: Any]] ?? []).compactMap { $0["via"] as? String }
        #expect(routes == ["push_to_start", "silent", "broadcast"])
    }
}
