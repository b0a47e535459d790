import Foundation
import ProcessTestSupport
import Testing

/// Trying Herald without Apple: `herald simulator` and `herald serve --simulator` print the
/// variables `herald send`, `herald channels` and `herald broadcast` need, as an `export` block and
/// (with `--env-file`) as a file, and the commands reach the simulator with them alone.
@Suite struct SimulatorExportTests {
    static let token = String(repeating: "ab", count: 32)

    /// Runs `script` in bash with the block evaluated first; `HERALD` names the binary.
    static func shell(
        _ script: String,
        block: String,
        environment: [String: String] = [:]
    ) async throws -> (
        status: Int32, output: String, error: String
    ) {
        var variables = ProcessInfo.processInfo.environment
        // Nothing from the test's own environment may help: only the block configures APNs.
        for name in variables.keys where name.hasPrefix("APNS_") || name == "APPLE_TEAM_ID" || name == "TOPIC" {
            variables[name] = nil
        }
        variables["HERALD_APPS_FILE"] = nil
        variables["BLOCK"] = block
        variables["HERALD"] = HeraldProcess.binary.path
        variables.merge(environment) { _, new in new }
        let result = try await ChildProcess.run("/bin/bash", arguments: ["-c", script], environment: variables)
        return (result.termination.status, result.standardOutput, result.standardError)
    }

    /// The `export` lines of a banner, from the comment that introduces them.
    static func exportBlock(of herald: HeraldProcess, lines count: Int) async throws -> String {
        let lines = try await herald.lines(
            from: "# herald send, herald channels and herald broadcast",
            followedBy: count
        )
        return lines.joined(separator: "\n")
    }

    @Test func standaloneSimulatorExportsEveryVariableTheCommandsNeed() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-exports-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let environmentFile = directory.appendingPathComponent("simulator.env").path
        let simulator = try HeraldProcess(
            arguments: ["simulator", "--port", "0", "--control-port", "0", "--env-file", environmentFile],
            environment: [:],
            capturingStandardOutput: true
        )
        let block = try await Self.exportBlock(of: simulator, lines: 9)
        let names = block.split(separator: "\n").filter { $0.hasPrefix("export ") }
            .map { $0.dropFirst("export ".count).prefix { $0 != "=" } }
        #expect(
            Set(names.map(String.init)) == [
                "APNS_PRODUCTION_URL", "APNS_SANDBOX_URL", "APNS_MANAGEMENT_PRODUCTION_URL",
                "APNS_MANAGEMENT_SANDBOX_URL", "APNS_CA_FILE", "APNS_AUTH_KEY_FILE", "APNS_KEY_ID", "APPLE_TEAM_ID",
                "TOPIC",
            ],
            "block:\n\(block)"
        )

        let send = try await Self.shell(
            #"eval "$BLOCK" && "$HERALD" send --token \#(Self.token) --alert Hello"#,
            block: block
        )
        #expect(send.status == 0, "stderr: \(send.error)")
        #expect(send.output.hasPrefix("status=200 "), "stdout: \(send.output)")
        #expect(send.output.contains("environment=production"))

        let channels = try await Self.shell(#"eval "$BLOCK" && "$HERALD" channels create"#, block: block)
        #expect(channels.status == 0, "stderr: \(channels.error)")
        #expect(channels.output.hasPrefix("channel-id="), "stdout: \(channels.output)")

        // The same from the file, as a shell or systemd reads it.
        let fromFile = try await Self.shell(
            #"set -a && . "$FILE" && set +a && "$HERALD" send --token \#(Self.token) --alert Hello"#,
            block: "",
            environment: ["FILE": environmentFile]
        )
        #expect(fromFile.status == 0, "stderr: \(fromFile.error)")
        #expect(fromFile.output.hasPrefix("status=200 "), "stdout: \(fromFile.output)")

        // APNS_ENVIRONMENT=sandbox: a push naming no environment goes to the sandbox host, here the
        // simulator, while the production host is a port nothing listens on.
        let sandbox = try await Self.shell(
            #"eval "$BLOCK" && export APNS_ENVIRONMENT=sandbox APNS_PRODUCTION_URL=https://127.0.0.1:1 && "#
                + #""$HERALD" send --token \#(Self.token) --alert Hello"#,
            block: block
        )
        #expect(sandbox.status == 0, "stderr: \(sandbox.error)")
        #expect(sandbox.output.hasPrefix("status=200 "), "stdout: \(sandbox.output)")
        #expect(sandbox.output.contains("environment=sandbox"))
        simulator.signal(SIGTERM)
        #expect(try await simulator.waitForExit(timeout: .seconds(10)) == 0, "log:\n\(simulator.log)")
    }

    /// With `HERALD_API_KEYS` set, the banner says the key stays the same across restarts and the
    /// in-process simulator's block reaches it too.
    @Test func serveSimulatorExportsAndSaysAConfiguredKeyIsStable() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-exports-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let herald = try HeraldProcess(
            arguments: ["serve", "--simulator", "--host", "127.0.0.1", "--port", "0"],
            environment: [
                "DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite", "TOPIC": "org.example.demo",
                "HERALD_API_KEYS": "stable-test-key-0123456789",
            ],
            capturingStandardOutput: true
        )
        _ = try await herald.listeningPort()
        let block = try await Self.exportBlock(of: herald, lines: 9)
        #expect(herald.log.contains("HERALD_API_KEYS is set: /v1 and /simulator take its keys, and they stay the same"))
        #expect(!herald.log.contains("stable-test-key"), "the configured key is never printed")
        #expect(block.contains("export TOPIC=org.example.demo"), "block:\n\(block)")
        let send = try await Self.shell(
            #"eval "$BLOCK" && "$HERALD" send --token \#(Self.token) --alert Hello"#,
            block: block
        )
        #expect(send.status == 0, "stderr: \(send.error)")
        #expect(send.output.hasPrefix("status=200 "), "stdout: \(send.output)")
        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit(timeout: .seconds(10)) == 0, "log:\n\(herald.log)")
    }
}
