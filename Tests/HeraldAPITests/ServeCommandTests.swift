import AsyncTestSupport
import Foundation
import HeraldAPI
import HeraldCore
import Storage
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#endif

/// `herald serve` as an operator runs it: the real binary, a real database, real HTTP.
@Suite struct ServeCommandTests {
    func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-serve-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test func servesSystemRoutesAndStopsGracefullyOnSIGINT() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let herald = try HeraldProcess(
            arguments: ["serve", "--host", "127.0.0.1", "--port", "0"],
            environment: ["DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite"]
        )
        let port = try await herald.listeningPort()
        let base = "http://127.0.0.1:\(port)"
        #expect(
            herald.log.contains(#"allocator="jemalloc "#),
            "the start-up line names the allocator; log:\n\(herald.log)"
        )

        let root = try await fetch(base + "/")
        #expect(root.status == 200)
        #expect(root.body == #"{"api":"/v1","health":"/healthz","ready":"/readyz","service":"herald"}"#)
        #expect(try await fetch(base + "/", method: "HEAD").status == 200)
        // The API's root lists its operations without a key, each with the credential it takes.
        let index = try await fetch(base + "/v1")
        #expect(index.status == 200)
        #expect(
            index.body.contains(
                #"{"authentication":"api_key_or_client_token","feature":"Polls","method":"POST","#
                    + #""path":"/v1/polls/{id}/finalize"}"#
            )
        )
        #expect(index.body.contains(#""authentication":"client_token","feature":"Boards""#))
        #expect(!index.body.contains("/push/"), "the relay is not under /v1")
        let health = try await fetch(base + "/healthz")
        #expect(health.status == 200)
        #expect(health.body == #"{"status":"ok"}"#)
        let ready = try await fetch(base + "/readyz")
        #expect(ready.status == 200)
        let missing = try await fetch(base + "/nope")
        #expect(missing.status == 404)
        #expect(missing.body.contains(#""code":"not_found""#))
        #expect(missing.body.contains("(GET /v1 lists every operation)"))
        let metrics = try await fetch(base + "/metrics")
        #expect(metrics.body.contains(#"herald_http_requests_total{method="GET",route="/healthz",status="200"} 1"#))
        #expect(metrics.body.contains("herald_http_request_duration_seconds_bucket"))
        // The executable's allocator (jemalloc) and the process's memory, read at render time.
        for gauge in [
            "herald_memory_allocated_bytes", "herald_memory_allocator_resident_bytes",
            "herald_process_resident_memory_bytes",
        ] {
            let line = metrics.body.split(separator: "\n").first { $0.hasPrefix(gauge + " ") }
            let value = line.flatMap { Double($0.split(separator: " ")[1]) } ?? 0
            #expect(value > 1_000_000, "\(gauge) should be a plausible byte count; got \(line ?? "no line")")
        }

        herald.signal(SIGINT)
        let status = try await herald.waitForExit(timeout: .seconds(10))
        #expect(status == 0, "herald must exit 0 within 10 s of SIGINT; log:\n\(herald.log)")
        let log = herald.log
        #expect(log.contains("route=/healthz"))
        #expect(log.contains("NOTICE herald: stopped"), "log:\n\(log)")
        #expect(FileManager.default.fileExists(atPath: directory.path + "/herald.sqlite"))
    }

    @Test func invalidConfigurationExitsWithStatus2AndSaysWhatToFix() async throws {
        let herald = try HeraldProcess(
            arguments: ["serve"],
            environment: ["PORT": "http", "LOG_FORMAT": "xml", "DATABASE_URL": "mysql://u:secret@h/db"]
        )
        let status = try await herald.waitForExit(timeout: .seconds(10))
        #expect(status == 2)
        let log = herald.log
        #expect(log.contains("PORT=http is not valid"))
        #expect(log.contains("LOG_FORMAT=xml is not valid"))
        #expect(log.contains("DATABASE_URL is not valid"))
        #expect(!log.contains("secret"))
    }

    @Test func helpAndVersion() async throws {
        let version = try HeraldProcess(arguments: ["--version"], environment: [:], capturingStandardOutput: true)
        #expect(try await version.waitForExit(timeout: .seconds(10)) == 0)
        let versionLog = version.log
        #expect(versionLog.hasPrefix("herald 0."), "log: \(versionLog)")
        #expect(versionLog.contains("(jemalloc 5."), "the version names the allocator; log: \(versionLog)")
        let unknown = try HeraldProcess(arguments: ["serve", "--bogus"], environment: [:])
        #expect(try await unknown.waitForExit(timeout: .seconds(10)) == 2)
        #expect(unknown.log.contains("unknown option --bogus"))
    }

    /// Two instances started at once on one PostgreSQL database both migrate and serve.
    @Test func twoInstancesShareOnePostgresDatabase() async throws {
        guard let adminURL = ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_URL"] else {
            Issue.record("HERALD_TEST_POSTGRES_URL is not set: run `make test`, which starts a throwaway PostgreSQL")
            return
        }
        let name = "herald_serve_\(UUID().uuidString.prefix(8).lowercased())"
        let admin = try await DatabaseFactory.open(url: adminURL, logger: Logger(label: "test"))
        try await admin.execute("CREATE DATABASE \(name)", [])
        let slash = try #require(adminURL.lastIndex(of: "/"))
        let url = adminURL[..<slash] + "/\(name)"

        let first = try HeraldProcess(
            arguments: ["serve", "--host", "127.0.0.1", "--port", "0"],
            environment: ["DATABASE_URL": String(url)]
        )
        let second = try HeraldProcess(
            arguments: ["serve", "--host", "127.0.0.1", "--port", "0"],
            environment: ["DATABASE_URL": String(url)]
        )
        for herald in [first, second] {
            let port = try await herald.listeningPort()
            #expect(try await fetch("http://127.0.0.1:\(port)/readyz").status == 200)
        }
        for herald in [first, second] {
            herald.signal(SIGTERM)
            #expect(try await herald.waitForExit(timeout: .seconds(10)) == 0, "log:\n\(herald.log)")
        }
        let database = try await DatabaseFactory.open(url: String(url), logger: Logger(label: "test"))
        let applied = try await database.query("SELECT module, number FROM herald_migrations", [])
        let versions = try applied.map { "\(try $0.string("module")) \(try $0.int("number"))" }.sorted()
        #expect(versions == HeraldSchema.migrations.map(\.id.description).sorted())
        #expect(!versions.isEmpty)
        await database.close()
        try await admin.execute("DROP DATABASE \(name)", [])
        await admin.close()
    }

    @Test func relayRefusesToStartWithoutItsVariablesAndNamesEach() async throws {
        let herald = try HeraldProcess(
            arguments: ["relay"],
            environment: ["CONNECTION_POOL_SIZE": "5", "WEB_CONCURRENCY": "2", "RACK_ENV": "production"]
        )
        #expect(try await herald.waitForExit(timeout: .seconds(10)) == 2)
        for variable in ["APNS_AUTH_KEY", "APNS_KEY_ID", "APPLE_TEAM_ID", "TOPIC"] {
            #expect(herald.log.contains("\(variable) is not set"), "log:\n\(herald.log)")
        }
        #expect(!herald.log.contains("CONNECTION_POOL_SIZE"))
    }

    /// `make run` without Apple credentials: the relay goes to the in-process simulator, whose
    /// deliveries are served under /simulator/.
    @Test func simulatorModeRelaysToTheInProcessSimulator() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let herald = try HeraldProcess(
            arguments: ["serve", "--simulator", "--host", "127.0.0.1", "--port", "0"],
            environment: [
                "DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite", "TOPIC": "org.example.demo",
                "HERALD_RELAY": "1",
            ],
            capturingStandardOutput: true
        )
        let port = try await herald.listeningPort()
        // The session key is printed to the terminal (standard output) at start-up.
        let key = try await Self.sessionKey(of: herald)
        let base = "http://127.0.0.1:\(port)"
        let token = String(repeating: "cd", count: 32)
        var request = URLRequest(url: URL(string: "\(base)/push/\(token)/7")!)
        request.httpMethod = "POST"
        request.setValue("aes128gcm", forHTTPHeaderField: "Content-Encoding")
        request.httpBody = Data([1, 2, 3])
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 202)
        // The relay answers 202 before APNs has answered: poll the simulator's record.
        let lastDeliveries = Mutex("")
        try await eventually("a delivery answered 200") {
            let body = try await fetch(
                "\(base)/simulator/deliveries?token=\(token)",
                headers: ["Authorization": "Bearer \(key)"]
            ).body
            lastDeliveries.withLock { $0 = body }
            return body.contains("\"status\":200")
        }
        let deliveries = lastDeliveries.withLock { $0 }
        #expect(deliveries.contains("\"topic\":\"org.example.demo\""))
        #expect(deliveries.contains("\"status\":200"))
        #expect(herald.log.contains("nothing is sent to Apple"))
        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit(timeout: .seconds(10)) == 0, "log:\n\(herald.log)")
    }

    /// The line after "this session's API key" on standard output.
    static func sessionKey(of herald: HeraldProcess) async throws -> String {
        let lines = try await herald.lines(from: "this session's API key", followedBy: 1)
        return lines[1].trimmingCharacters(in: .whitespaces)
    }

    /// `herald serve --simulator`: the control API takes the /v1 key, and its registries are
    /// bounded by the --simulator-max-* flags.
    @Test func simulatorControlAPINeedsTheKeyAndIsBounded() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = "control-test-key-0123456789"
        let herald = try HeraldProcess(
            arguments: [
                "serve", "--simulator", "--host", "127.0.0.1", "--port", "0", "--simulator-max-tokens", "2",
                "--simulator-max-faults", "1",
            ],
            environment: ["DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite", "HERALD_API_KEYS": key]
        )
        let port = try await herald.listeningPort()
        let base = "http://127.0.0.1:\(port)/simulator"
        let auth = ["Authorization": "Bearer \(key)"]

        for (method, path) in [("GET", "/deliveries"), ("GET", "/tokens"), ("GET", "/"), ("DELETE", "/faults")] {
            let anonymous = try await fetch(base + path, method: method)
            #expect(anonymous.status == 401, "\(method) \(path) without a key")
            #expect(anonymous.body.contains("missing_api_key"))
        }
        let wrong = try await fetch(
            base + "/tokens",
            method: "POST",
            headers: ["Authorization": "Bearer nope"],
            body: "{}"
        )
        #expect(wrong.status == 401)
        #expect(try await fetch(base + "/deliveries", headers: auth).status == 200)

        for index in 0..<2 {
            let token = String(format: "%064x", index)
            let added = try await fetch(
                base + "/tokens",
                method: "POST",
                headers: auth,
                body: #"{"token":"\#(token)"}"#
            )
            #expect(added.status == 200)
        }
        let third = try await fetch(
            base + "/tokens",
            method: "POST",
            headers: auth,
            body: #"{"token":"\#(String(repeating: "ee", count: 32))"}"#
        )
        #expect(third.status == 409)
        #expect(third.body.contains("limit_reached"))

        let fault = #"{"type":"status","status":500,"reason":"InternalServerError"}"#
        #expect(try await fetch(base + "/faults", method: "POST", headers: auth, body: fault).status == 201)
        let secondFault = try await fetch(base + "/faults", method: "POST", headers: auth, body: fault)
        #expect(secondFault.status == 409)
        #expect(secondFault.body.contains("limit_reached"))

        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit(timeout: .seconds(10)) == 0, "log:\n\(herald.log)")
        #expect(!herald.log.contains(key), "the API key must not be logged")
    }

    @Test func invalidRequestTimeoutAndPerIPLimitExitWithStatus2() async throws {
        let herald = try HeraldProcess(
            arguments: ["serve", "--simulator-max-deliveries", "0"],
            environment: ["HERALD_REQUEST_TIMEOUT": "30s", "HERALD_MAX_CONNECTIONS_PER_IP": "-1"]
        )
        #expect(try await herald.waitForExit(timeout: .seconds(10)) == 2)
        let log = herald.log
        #expect(log.contains("HERALD_REQUEST_TIMEOUT=30s is not valid: use a whole number of seconds"), "log: \(log)")
        #expect(log.contains("HERALD_MAX_CONNECTIONS_PER_IP=-1 is not valid"), "log: \(log)")
        #expect(log.contains("--simulator-max-deliveries 0 is not a number"), "log: \(log)")
    }
}
