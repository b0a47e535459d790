import AsyncTestSupport
import DatabaseTestSupport
import Foundation
import HeraldCrypto
import ProcessTestSupport
import Testing

/// Webhooks end to end against a real `herald serve` on SQLite and PostgreSQL, with receivers
/// written with Python's standard library on 127.0.0.1 (Tests/Support/webhook_receiver.py):
/// an HTTP/1.1-only `http.server` gets signed events; a hostile HTTP/2 server sending a header
/// list without end is dropped, and Herald goes on with little memory spent on it.
@Suite("herald serve: webhooks")
struct ServeWebhooksTests {
    static let key = "serve-webhook-key-0123456789"
    static let secret = "serve-webhook-secret-0123456789"
    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Support/webhook_receiver.py").path

    /// A Python receiver (`record`, `bomb-h1`, `bomb-h2`) running in `directory`.
    struct Python {
        let process: ChildProcess
        let port: Int
        let out: URL

        init(_ mode: String, in directory: URL, tls: (cert: String, key: String)? = nil) async throws {
            let portFile = directory.appendingPathComponent("\(mode).port").path
            out = directory.appendingPathComponent("\(mode)-out")
            try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
            process = try ChildProcess(
                executable: "/usr/bin/python3",
                arguments: [ServeWebhooksTests.script, mode, portFile, out.path]
                    + (tls.map { [$0.cert, $0.key] } ?? []),
                standardError: .capture
            )
            let started = process
            try await eventually("python3 \(mode) listens", timeout: .seconds(30)) {
                FileManager.default.fileExists(atPath: portFile) || !started.isRunning
            }
            port = try #require(
                Int((try? String(contentsOfFile: portFile, encoding: .utf8)) ?? ""),
                "\(process.standardError.text)"
            )
        }

        /// The bodies and Herald-Signature headers of the POSTs `record` took.
        var deliveries: [(signature: String, body: Data)] {
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: out.path)) ?? []).filter {
                $0.hasSuffix(".json")
            }
            return names.sorted().compactMap { name in
                guard let data = FileManager.default.contents(atPath: out.appendingPathComponent(name).path),
                    let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                    let headers = object["headers"] as? [[String]],
                    let signature = headers.first(where: { $0.first?.lowercased() == "herald-signature" })?.last,
                    let body = (object["body"] as? String).flatMap({ Data(base64Encoded: $0) })
                else { return nil }
                return (signature, body)
            }
        }

        var requests: Int {
            Int((try? String(contentsOfFile: out.appendingPathComponent("requests").path, encoding: .utf8)) ?? "") ?? 0
        }

        func stop() async {
            _ = process.signal(SIGTERM)
            _ = try? await process.waitForExit()
        }
    }

    /// HMAC-SHA256 of "<t>.<body>" with the secret, computed by the openssl command.
    static func verify(signature header: String, body: Data, secret: String) async throws -> Bool {
        let parts = Dictionary(
            header.split(separator: ",").map { part -> (String, String) in
                let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
                return (pair[0], pair.count > 1 ? pair[1] : "")
            },
            uniquingKeysWith: { $1 }
        )
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("herald-signed-\(UUID())")
        try (Data("\(try #require(parts["t"])).".utf8) + body).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try await ChildProcess.run(
            "/usr/bin/openssl",
            arguments: ["dgst", "-sha256", "-mac", "HMAC", "-macopt", "key:\(secret)", "-r", file.path]
        )
        return result.standardOutput.split(separator: " ").first.map(String.init) == parts["v1"]
    }

    static func vmRSSKiB(_ pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return nil }
        return Int(line.split(separator: " ").dropFirst().first ?? "")
    }

    @Test(
        "an HTTP/1.1-only receiver gets signed events; a header bomb is dropped; refused destinations are 400",
        arguments: [Backend.sqliteFile, .postgres]
    )
    func webhooksEndToEnd(backend: Backend) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-serve-webhooks-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let certificate = try SelfSignedCertificate.generate(
            commonName: "localhost",
            subjectAlternativeNames: ["localhost", "127.0.0.1"],
            key: P256PrivateKey(),
            validity: .seconds(86_400)
        )
        let cert = directory.appendingPathComponent("cert.pem").path
        let keyFile = directory.appendingPathComponent("key.pem").path
        try certificate.certificatePEM.write(toFile: cert, atomically: true, encoding: .utf8)
        try certificate.privateKeyPEM.write(toFile: keyFile, atomically: true, encoding: .utf8)
        let database = try await LiveActivityServer.database(backend)
        defer { Task { await database.remove() } }

        let receiver = try await Python("record", in: directory)
        let bomb = try await Python("bomb-h2", in: directory, tls: (cert, keyFile))
        let herald = try HeraldProcess(
            arguments: ["serve", "--simulator", "--host", "127.0.0.1", "--port", "0"],
            environment: [
                "DATABASE_URL": database.url, "TOPIC": "org.example.webhooks", "HERALD_API_KEYS": Self.key,
                "HERALD_WEBHOOK_ALLOW_HTTP": "1", "HERALD_WEBHOOK_ALLOW_PRIVATE": "1", "HERALD_WEBHOOK_CA_FILE": cert,
            ]
        )
        let base = "http://127.0.0.1:\(try await herald.listeningPort())"
        let auth = ["Authorization": "Bearer \(Self.key)", "Content-Type": "application/json"]
        func create(_ url: String) async throws -> String {
            let created = try await fetch(
                "\(base)/v1/webhooks",
                method: "POST",
                headers: auth,
                body: #"{"url": "\#(url)", "events": ["notification.finished"], "secret": "\#(Self.secret)"}"#
            )
            #expect(created.status == 201, "\(created.body)")
            let object = try JSONSerialization.jsonObject(with: Data(created.body.utf8)) as? [String: Any]
            return try #require(object?["id"] as? String)
        }
        let good = try await create("http://127.0.0.1:\(receiver.port)/hooks")
        let hostile = try await create("https://localhost:\(bomb.port)/hooks")
        let rssBefore = try #require(Self.vmRSSKiB(herald.child.pid))

        let sent = try await fetch(
            "\(base)/v1/notifications?wait=true",
            method: "POST",
            headers: auth,
            body: #"{"tokens":["\#(String(repeating: "ab", count: 32))"],"payload":{"aps":{"alert":"Hi"}}}"#
        )
        #expect(sent.status == 200, "\(sent.body)")
        try await eventually("the receiver got the event and the bomb was tried", timeout: .seconds(60)) {
            let state = try await fetch("\(base)/v1/webhooks/\(hostile)", headers: auth).body
            return !receiver.deliveries.isEmpty && state.contains("last_error\":\"")
        }
        let delivery = try #require(receiver.deliveries.first)
        #expect(try await Self.verify(signature: delivery.signature, body: delivery.body, secret: Self.secret))
        #expect(String(decoding: delivery.body, as: UTF8.self).contains("notification.finished"))
        #expect(try await fetch("\(base)/v1/webhooks/\(good)", headers: auth).body.contains(#""delivered":1"#))
        let hostileState = try await fetch("\(base)/v1/webhooks/\(hostile)", headers: auth).body
        #expect(hostileState.contains(#""pending":1"#), "\(hostileState)")
        #expect(!hostileState.contains("did not answer in time"), "dropped, not timed out: \(hostileState)")
        #expect(bomb.requests >= 1)
        // Herald is fine: it answers, and the bomb cost it under 16 MiB.
        #expect(try await fetch("\(base)/healthz").status == 200)
        let rssAfter = try #require(Self.vmRSSKiB(herald.child.pid))
        #expect(rssAfter - rssBefore < 16 * 1_024, "RSS grew \(rssAfter - rssBefore) KiB")

        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit(timeout: .seconds(30)) == 0)
        await receiver.stop()
        await bomb.stop()
    }

    @Test("without HERALD_WEBHOOK_ALLOW_PRIVATE, loopback and metadata URLs are 400 destination_not_allowed")
    func destinationPolicyByDefault() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-serve-webhooks-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let herald = try HeraldProcess(
            arguments: ["serve", "--simulator", "--host", "127.0.0.1", "--port", "0"],
            environment: [
                "DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite", "TOPIC": "org.example.webhooks",
                "HERALD_API_KEYS": Self.key, "HERALD_WEBHOOK_ALLOW_HTTP": "1",
            ]
        )
        let base = "http://127.0.0.1:\(try await herald.listeningPort())"
        let auth = ["Authorization": "Bearer \(Self.key)", "Content-Type": "application/json"]
        for url in [
            "http://127.0.0.1:9/", "http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/", "http://[::1]/",
            "http://[fd00::1]/", "http://100.64.0.1/", "http://0.0.0.0/", "http://[::ffff:127.0.0.1]/",
            "http://2130706433/", "http://localhost:9/",
        ] {
            let answer = try await fetch(
                "\(base)/v1/webhooks",
                method: "POST",
                headers: auth,
                body: #"{"url": "\#(url)", "events": ["notification.finished"]}"#
            )
            #expect(answer.status == 400, "\(url): \(answer.body)")
            #expect(answer.body.contains(#""code":"destination_not_allowed""#), "\(url): \(answer.body)")
            #expect(answer.body.contains(#""field":"url""#))
        }
        let metrics = try await fetch("\(base)/metrics").body
        #expect(metrics.contains(#"herald_webhook_destinations_refused_total{stage="creation"} 10"#), "\(metrics)")
        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit(timeout: .seconds(30)) == 0)
    }
}
