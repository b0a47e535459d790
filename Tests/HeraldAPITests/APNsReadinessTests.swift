import Foundation
import HeraldCrypto
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `/readyz` of `herald serve` follows the APNs pools that notifications and the relay share.
@Suite("herald serve: APNs readiness")
struct APNsReadinessTests {
    @Test func readyzFailsOnceAPNsCannotBeReachedAndNamesIt() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-readyz-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("key.p8").path
        try P256PrivateKey().pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        let herald = try HeraldProcess(
            arguments: ["serve", "--host", "127.0.0.1", "--port", "0"],
            environment: [
                "DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite", "APNS_AUTH_KEY_FILE": keyFile,
                "APNS_KEY_ID": "READYKEY01", "APPLE_TEAM_ID": "READYTEAM1", "TOPIC": "org.example.ready",
                "HERALD_RELAY": "1",
                // Port 1 on loopback: nothing listens, every connect is refused.
                "APNS_PRODUCTION_URL": "https://127.0.0.1:1", "APNS_SANDBOX_URL": "https://127.0.0.1:1",
            ]
        )
        let base = "http://127.0.0.1:\(try await herald.listeningPort())"
        // No pool is open yet: nothing has failed.
        #expect(try await fetch("\(base)/readyz").status == 200)
        // A relayed push opens the production pool, whose connect is refused.
        var request = URLRequest(url: URL(string: "\(base)/push/\(String(repeating: "ab", count: 32))/x")!)
        request.httpMethod = "POST"
        request.setValue("aes128gcm", forHTTPHeaderField: "Content-Encoding")
        request.httpBody = Data(repeating: 0x41, count: 120)
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 503)
        let ready = try await fetch("\(base)/readyz")
        #expect(ready.status == 503)
        #expect(ready.body.contains(#""apns":{"error":"cannot connect to https://127.0.0.1:1"#))
        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit(timeout: .seconds(10)) == 0, "log:\n\(herald.log)")
    }
}
