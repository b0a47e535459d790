import AsyncTestSupport
import Foundation
import HTTP2TestSupport
import HeraldCrypto
import ProcessTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `herald serve` whose APNs host is a hostile HTTP/2 server answering every push with a header
/// bomb: one header block that HPACK expands to hundreds of MiB. Herald drops each such
/// connection after 64 KiB of header list, and its memory barely moves.
@Suite("herald serve: hostile HTTP/2 peers (APNs, a webhook receiver)", .serialized)
struct ServeHeaderBombTests {
    /// VmRSS of `pid` in bytes, from /proc.
    static func residentBytes(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        let kilobytes = try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
        return kilobytes * 1024
    }

    @Test("a header bomb from the APNs host is dropped, with Herald's RSS growth under 16 MiB")
    func headerBombIsDropped() async throws {
        // 120,000 one-byte references to a 3,000-byte field: 120 KB on the wire, 360 MB decoded.
        let server = try HostileHTTP2Server(bomb: .hpackAmplification(references: 120_000))
        defer { server.close() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bomb-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let caFile = directory.appendingPathComponent("hostile-ca.pem").path
        try server.certificatePEM.write(toFile: caFile, atomically: true, encoding: .utf8)
        let keyFile = directory.appendingPathComponent("key.p8").path
        try P256PrivateKey().pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        let key = "header-bomb-test-key-0123456789"
        let herald = try HeraldProcess(
            arguments: ["serve", "--host", "127.0.0.1", "--port", "0"],
            environment: [
                "DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite", "HERALD_API_KEYS": key,
                "APNS_AUTH_KEY_FILE": keyFile, "APNS_KEY_ID": "BOMBKEY001", "APPLE_TEAM_ID": "BOMBTEAM01",
                "TOPIC": "org.example.bomb", "APNS_PRODUCTION_URL": server.url, "APNS_SANDBOX_URL": server.url,
                "APNS_CA_FILE": caFile,
            ]
        )
        let port = try await herald.listeningPort()
        let base = "http://127.0.0.1:\(port)"
        let headers = ["Authorization": "Bearer \(key)", "Content-Type": "application/json"]
        // Warm up the paths a send takes (HTTP, JSON, the database), then take the baseline.
        let scheduled = try await fetch(
            base + "/v1/notifications",
            method: "POST",
            headers: headers,
            body: #"{"tokens":["\#(String(repeating: "cd", count: 32))"],"payload":{"aps":{"alert":"Later"}},"#
                + #""send_at":\#(Int(Date().timeIntervalSince1970) + 3_600)}"#
        )
        #expect(scheduled.status == 202, "\(scheduled.body)")
        let before = try Self.residentBytes(herald.child.pid)

        let tokens = (0..<8).map { index in
            "\"" + String(format: "%02x", index) + String(repeating: "ab", count: 31) + "\""
        }
        let sent = try await fetch(
            base + "/v1/notifications",
            method: "POST",
            headers: headers,
            body: #"{"tokens":[\#(tokens.joined(separator: ","))],"payload":{"aps":{"alert":"Boom"}}}"#
        )
        #expect(sent.status == 202, "\(sent.body)")
        // Every connection Herald opened got bombs, and Herald dropped it.
        try await eventually(timeout: .seconds(60)) {
            let stats = server.current
            return stats.bombsSent >= 1 && stats.closed >= 1 && stats.closed == stats.connections
        }
        let log = try await herald.lines(from: "HTTP/2 server sent an oversized header list")
        #expect(log[0].contains("limit=\"a response header list over 65536 bytes"), "\(log)")
        let after = try Self.residentBytes(herald.child.pid)
        let stats = server.current
        #expect(
            after - before < 16 << 20,
            "RSS grew by \((after - before) >> 10) KiB after \(stats.bombsSent) bombs of 360 MB decoded each"
        )
        #expect(herald.isRunning)
        herald.signal(SIGTERM)
        _ = try await herald.waitForExit(timeout: .seconds(15))
    }

    @Test("an HPACK bomb from a webhook receiver (HTTP/2 over libcurl) is dropped, with RSS growth under 16 MiB")
    func webhookHeaderBombIsDropped() async throws {
        let server = try HostileHTTP2Server(bomb: .hpackAmplification(references: 120_000))
        defer { server.close() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bomb-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let caFile = directory.appendingPathComponent("hostile-ca.pem").path
        try server.certificatePEM.write(toFile: caFile, atomically: true, encoding: .utf8)
        let key = "header-bomb-test-key-0123456789"
        let herald = try HeraldProcess(
            arguments: ["serve", "--simulator", "--host", "127.0.0.1", "--port", "0"],
            environment: [
                "DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite", "HERALD_API_KEYS": key,
                "TOPIC": "org.example.bomb", "HERALD_WEBHOOK_CA_FILE": caFile, "HERALD_WEBHOOK_ALLOW_PRIVATE": "1",
            ]
        )
        let base = "http://127.0.0.1:\(try await herald.listeningPort())"
        let headers = ["Authorization": "Bearer \(key)", "Content-Type": "application/json"]
        let created = try await fetch(
            base + "/v1/webhooks",
            method: "POST",
            headers: headers,
            body: #"{"url":"\#(server.url)/hooks","events":["notification.finished"]}"#
        )
        #expect(created.status == 201, "\(created.body)")
        let webhook = try #require(
            (try JSONSerialization.jsonObject(with: Data(created.body.utf8)) as? [String: Any])?["id"] as? String
        )
        let before = try Self.residentBytes(herald.child.pid)

        for index in 0..<4 {
            let token = String(format: "%02x", index) + String(repeating: "cd", count: 31)
            let sent = try await fetch(
                base + "/v1/notifications?wait=true",
                method: "POST",
                headers: headers,
                body: #"{"tokens":["\#(token)"],"payload":{"aps":{"alert":"Boom"}}}"#
            )
            #expect(sent.status == 200, "\(sent.body)")
        }
        // libcurl dropped the connection at the bomb; the delivery failed and will be retried.
        try await eventually(timeout: .seconds(60)) {
            let stats = server.current
            let state = try await fetch(base + "/v1/webhooks/\(webhook)", headers: headers).body
            return stats.bombsSent >= 1 && stats.closed >= 1 && state.contains(#""last_error":""#)
        }
        let state = try await fetch(base + "/v1/webhooks/\(webhook)", headers: headers).body
        #expect(!state.contains("did not answer in time"), "dropped, not timed out: \(state)")
        #expect(!state.contains(#""delivered":1"#), "\(state)")
        let after = try Self.residentBytes(herald.child.pid)
        let stats = server.current
        #expect(
            after - before < 16 << 20,
            "RSS grew by \((after - before) >> 10) KiB after \(stats.bombsSent) bombs of 360 MB decoded each"
        )
        #expect(try await fetch(base + "/healthz").status == 200)
        herald.signal(SIGTERM)
        _ = try await herald.waitForExit(timeout: .seconds(15))
    }
}
