import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#endif

/// `herald serve` shows little to whoever can reach it: `/metrics` behind `HERALD_METRICS_TOKEN`,
/// and the files it writes (the SQLite database and its companions, the simulator's keys and
/// certificate, `--env-file`) readable by their owner only.
@Suite struct ServeSurfacesTests {
    static func temporaryDirectory() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-surfaces-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.path
    }

    /// The permission bits of `path`, or nil when it does not exist.
    static func mode(_ path: String) -> UInt32? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return UInt32(status.st_mode) & 0o7777
    }

    /// `NAME=value` lines of an environment file (values here are unquoted paths and words).
    static func variables(in file: String) throws -> [String: String] {
        var values: [String: String] = [:]
        for line in try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
        where !line.hasPrefix("#") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            values[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return values
    }

    @Test("HERALD_METRICS_TOKEN guards /metrics; every file serve --simulator writes is 0600")
    func metricsTokenAndPrivateFiles() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = directory + "/herald.sqlite"
        // An env file left from an earlier run, readable by everyone: replaced by a private one.
        let environmentFile = directory + "/simulator.env"
        #expect(FileManager.default.createFile(atPath: environmentFile, contents: Data("OLD=1\n".utf8)))
        #expect(chmod(environmentFile, 0o644) == 0)
        let token = "metrics-e2e-token-0123456789abcdef"
        let herald = try HeraldProcess(
            arguments: ["serve", "--simulator", "--env-file", environmentFile, "--host", "127.0.0.1", "--port", "0"],
            environment: [
                "DATABASE_URL": "sqlite:\(database)", "TOPIC": "org.example.surfaces",
                "HERALD_API_KEYS": "surfaces-test-key-0123456789", "HERALD_METRICS_TOKEN": token,
            ]
        )
        let port = try await herald.listeningPort()
        let base = "http://127.0.0.1:\(port)"

        let missing = try await fetch(base + "/metrics")
        #expect(missing.status == 401)
        #expect(missing.body.contains(#""code":"missing_metrics_token""#))
        #expect(missing.body.contains("Authorization: Bearer <HERALD_METRICS_TOKEN>"))
        let wrong = try await fetch(
            base + "/metrics",
            headers: ["Authorization": "Bearer surfaces-test-key-0123456789"]
        )
        #expect(wrong.status == 401)
        #expect(wrong.body.contains(#""code":"invalid_metrics_token""#))
        let scrape = try await fetch(base + "/metrics", headers: ["Authorization": "Bearer \(token)"])
        #expect(scrape.status == 200)
        #expect(scrape.body.contains("herald_http_requests_total"))
        #expect(try await fetch(base + "/healthz").status == 200, "the other system routes stay open")

        // A write, so that SQLite has its -wal and -shm files.
        let created = try await fetch(
            base + "/v1/notifications",
            method: "POST",
            headers: ["Authorization": "Bearer surfaces-test-key-0123456789", "Content-Type": "application/json"],
            body: #"{"tokens":["\#(String(repeating: "ab", count: 32))"],"payload":{"aps":{"alert":"Hi"}}}"#
        )
        #expect(created.status == 202, "\(created.body)")
        let exported = try Self.variables(in: environmentFile)
        #expect(exported["OLD"] == nil, "the old file was replaced")
        var files = [database, database + "-wal", database + "-shm", environmentFile]
        for name in ["APNS_AUTH_KEY_FILE", "APNS_CA_FILE", "CLOUDKIT_PRIVATE_KEY_FILE"] {
            files.append(try #require(exported[name], "\(name) in \(exported)"))
        }
        for file in files {
            #expect(Self.mode(file) == 0o600, "\(file): \(Self.mode(file).map { String($0, radix: 8) } ?? "missing")")
        }
        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit(timeout: .seconds(15)) == 0)
        #expect(!herald.log.contains(token), "the metrics token is never logged")
    }

    @Test("an existing database file readable by others is made 0600 at start-up, and the log says so")
    func existingDatabaseIsTightened() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = directory + "/herald.sqlite"
        #expect(FileManager.default.createFile(atPath: database, contents: Data()))
        #expect(chmod(database, 0o644) == 0)
        let herald = try HeraldProcess(
            arguments: ["serve", "--host", "127.0.0.1", "--port", "0"],
            environment: ["DATABASE_URL": "sqlite:\(database)"]
        )
        _ = try await herald.listeningPort()
        #expect(Self.mode(database) == 0o600)
        #expect(Self.mode(database + "-wal") == 0o600)
        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit(timeout: .seconds(15)) == 0)
        #expect(herald.log.contains("removed group and other permissions from a database file"), "\(herald.log)")
        #expect(herald.log.contains("old_mode=644"), "\(herald.log)")
    }

    @Test("herald simulator writes its generated key, its certificate and --env-file 0600")
    func standaloneSimulatorFilesArePrivate() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let environmentFile = directory + "/simulator.env"
        let simulator = try HeraldProcess(
            arguments: ["simulator", "--port", "0", "--control-port", "0", "--env-file", environmentFile],
            environment: [:],
            capturingStandardOutput: true
        )
        _ = try await simulator.lines(from: "# herald send, herald channels and herald broadcast", followedBy: 9)
        let exported = try Self.variables(in: environmentFile)
        let files = [
            environmentFile, try #require(exported["APNS_AUTH_KEY_FILE"]), try #require(exported["APNS_CA_FILE"]),
        ]
        for file in files {
            #expect(Self.mode(file) == 0o600, "\(file): \(Self.mode(file).map { String($0, radix: 8) } ?? "missing")")
        }
        simulator.signal(SIGTERM)
        #expect(try await simulator.waitForExit(timeout: .seconds(10)) == 0)
    }
}
