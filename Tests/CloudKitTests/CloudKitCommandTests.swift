import APNs
import APNsSimulator
import AsyncTestSupport
import CloudKit
import Foundation
import HeraldCore
import HeraldCrypto
import ProcessTestSupport
import Testing

/// `herald cloudkit ping|cleanup|check`, the real binary against a running simulator.
@Suite struct CloudKitCommandTests {
    /// The `herald` binary beside the test bundle (SwiftPM builds every product before the tests).
    static var binary: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("herald").path
    }

    static func herald(
        _ arguments: [String],
        environment: [String: String]
    ) async throws -> (status: Int32, output: String, error: String) {
        var merged = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("CLOUDKIT_") }
        merged["HERALD_APPS_FILE"] = nil
        merged.merge(environment) { _, new in new }
        // A generous deadline: on a loaded machine a TLS connect on loopback has taken over 10 s.
        let result = try await ChildProcess.run(
            Self.binary,
            arguments: ["cloudkit"] + arguments + (arguments.isEmpty ? [] : ["--timeout", "60"]),
            environment: merged
        )
        return (result.termination.status, result.standardOutput, result.standardError)
    }

    /// The variables that point `herald cloudkit` at `fixture`'s simulator with `key`.
    static func environment(_ fixture: CloudKitFixture, key: P256PrivateKey, directory: URL) throws -> [String: String]
    {
        let keyFile = directory.appendingPathComponent("eckey-\(UUID().uuidString).pem").path
        try key.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        return [
            "CLOUDKIT_URL": fixture.simulator.url,
            "CLOUDKIT_CA_FILE": fixture.simulator.caFile ?? "",
            "CLOUDKIT_KEY_ID": CloudKitFixture.keyID,
            "CLOUDKIT_PRIVATE_KEY_FILE": keyFile,
        ]
    }

    static func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "herald-ck-cli-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test func pingCreatesARecordAndCleanupKeepsN() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withCloudKitSimulator { fixture in
            let environment = try Self.environment(fixture, key: fixture.privateKey, directory: directory)
            let common = ["--container", CloudKitFixture.container, "--environment", "development"]
            var names: [String] = []
            for _ in 0..<3 {
                let ping = try await Self.herald(["ping"] + common, environment: environment)
                #expect(ping.status == 0, "\(ping.error)")
                names.append(ping.output.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            let listed = try await fixture.control("GET", "/cloudkit/records?record_type=WakePing")
            guard case .array(let records)? = listed.json?["records"] else {
                Issue.record("no records array")
                return
            }
            let stored = records.compactMap { $0["record"]?["recordName"]?.stringValue }
            #expect(Set(stored) == Set(names))
            #expect(records.allSatisfy { $0["record"]?["fields"]?["ts"]?["value"] != nil })

            let cleanup = try await Self.herald(["cleanup", "--keep", "1"] + common, environment: environment)
            #expect(cleanup.status == 0, "\(cleanup.error)")
            #expect(cleanup.output.contains("deleted=2"))
            let after = try await fixture.control("GET", "/cloudkit/records?record_type=WakePing")
            guard case .array(let left)? = after.json?["records"] else {
                Issue.record("no records array")
                return
            }
            #expect(left.count == 1)
        }
    }

    @Test func checkSaysWhetherTheKeyIsAccepted() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withCloudKitSimulator { fixture in
            let common = ["--container", CloudKitFixture.container]
            let good = try Self.environment(fixture, key: fixture.privateKey, directory: directory)
            let accepted = try await Self.herald(["check"] + common, environment: good)
            #expect(accepted.status == 0, "\(accepted.error)")
            #expect(accepted.output.contains("key accepted"))

            let wrong = try Self.environment(fixture, key: P256PrivateKey(), directory: directory)
            let refused = try await Self.herald(["check"] + common, environment: wrong)
            #expect(refused.status == 1)
            #expect(refused.output.contains("key NOT accepted"))
            #expect(refused.output.contains("AUTHENTICATION_FAILED"))
            #expect(refused.error.contains("CLOUDKIT_KEY_ID"))
        }
    }

    @Test func usageAndConfigurationProblemsExitWith2() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("eckey.pem").path
        try P256PrivateKey().pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        let configured = ["CLOUDKIT_KEY_ID": "k1", "CLOUDKIT_PRIVATE_KEY_FILE": keyFile]
        let cases: [([String], [String: String], String)] = [
            ([], configured, "ping, cleanup --keep N, or check"),
            (["ping"], configured, "--container"),
            (["ping", "--container", CloudKitFixture.container], [:], "CLOUDKIT_KEY_ID"),
            (["cleanup", "--container", CloudKitFixture.container], configured, "--keep"),
            (["ping", "--container", CloudKitFixture.container, "--environment", "staging"], configured, "production"),
            (
                ["ping", "--container", CloudKitFixture.container], ["CLOUDKIT_KEY_ID": "k1"],
                "CLOUDKIT_PRIVATE_KEY_FILE"
            ),
            (
                ["ping", "--container", CloudKitFixture.container],
                configured.merging(["CLOUDKIT_URL": "ftp://x"]) { _, new in new }, "CLOUDKIT_URL"
            ),
            (["ping", "--container", "com.example"], configured, "container identifier"),
        ]
        for (arguments, environment, expected) in cases {
            let result = try await Self.herald(arguments, environment: environment)
            #expect(result.status == 2, "\(arguments): \(result.error)")
            #expect(result.error.contains(expected), "\(arguments): \(result.error)")
        }
    }

    /// `herald serve --simulator` serves CloudKit with a generated key and exports CLOUDKIT_*:
    /// evaluating its block is enough for `herald cloudkit ping`.
    @Test func serveSimulatorExportsCloudKitVariablesThatWork() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("CLOUDKIT_") }
        for name in ["PORT", "HOST", "DATABASE_URL", "LOG_LEVEL", "LOG_FORMAT", "HERALD_APPS_FILE"] {
            environment[name] = nil
        }
        environment["DATABASE_URL"] = "sqlite:\(directory.path)/herald.sqlite"
        environment["HERALD_API_KEYS"] = "cloudkit-test-key-0123456789"
        let serve = try ChildProcess(
            executable: Self.binary,
            arguments: ["serve", "--simulator", "--host", "127.0.0.1", "--port", "0"],
            environment: environment,
            standardOutput: .capture,
            standardError: .capture
        )
        defer { serve.signal(SIGTERM) }
        let output = serve.standardOutput
        let text = try await withDeadline(
            "the export block; stderr:\n\(serve.standardError.text)",
            timeout: .seconds(60)
        ) {
            try await output.waitUntil { $0.contains("export CLOUDKIT_PRIVATE_KEY_FILE=") && $0.contains("\n\nTry:") }
        }
        let block = try #require(text).split(separator: "\n").filter { $0.hasPrefix("export ") }.joined(separator: "\n")
        for name in ["CLOUDKIT_URL", "CLOUDKIT_CA_FILE", "CLOUDKIT_KEY_ID", "CLOUDKIT_PRIVATE_KEY_FILE"] {
            #expect(block.contains("export \(name)="), "block:\n\(block)")
        }
        var shell = environment
        shell["BLOCK"] = block
        shell["HERALD"] = Self.binary
        let ping = try await ChildProcess.run(
            "/bin/sh",
            arguments: [
                "-c", #"eval "$BLOCK" && "$HERALD" cloudkit ping --timeout 60 --container iCloud.org.example.demo"#,
            ],
            environment: shell
        )
        #expect(ping.termination.status == 0, "stderr: \(ping.standardError)")
        #expect(!ping.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty)
        serve.signal(SIGTERM)
        _ = try await serve.waitForExit()
    }
}
