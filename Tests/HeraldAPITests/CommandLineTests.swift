import Foundation
import HTTPRouting
import HTTPServer
import HeraldCore
import Testing

/// What the `herald` executable says when it is started wrongly: no command, a command's help,
/// a port another process holds.
@Suite struct CommandLineTests {
    @Test func noCommandPrintsUsageToStandardErrorAndExits2() async throws {
        let result = try await JobsCommandTests.herald([])
        #expect(result.status == 2)
        #expect(result.output.isEmpty)
        #expect(result.error.contains("Usage: herald <command>"))
        #expect(result.error.contains("relay"))
    }

    @Test func relayHelpIsTheRelaysOwn() async throws {
        let result = try await JobsCommandTests.herald(["relay", "--help"])
        #expect(result.status == 0)
        #expect(result.output.contains("Usage: herald relay"), "got:\n\(result.output)")
        for variable in ["APNS_AUTH_KEY", "APNS_KEY_ID", "APPLE_TEAM_ID", "TOPIC"] {
            #expect(result.output.contains(variable), "relay --help names \(variable)")
        }
        #expect(!result.output.contains("--simulator"))
        #expect(!result.output.contains("herald serve ["))
    }

    /// A port another server holds: one line naming the address and the cause, exit 2, and the
    /// simulator and job worker never start.
    @Test(arguments: [false, true])
    func portInUseIsOneLineAndExit2(simulator: Bool) async throws {
        var configuration = HTTPServer.Configuration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        let occupant = HTTPServer(
            configuration: configuration,
            responder: Router(),
            logger: Logger(label: "test.http", level: .critical),
            metrics: MetricsRegistry()
        )
        let running = Task { try await occupant.run() }
        defer {
            occupant.triggerGracefulShutdown()
            running.cancel()
        }
        let port = try await occupant.listeningPort()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-port-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let herald = try HeraldProcess(
            arguments: ["serve", "--host", "127.0.0.1", "--port", "\(port)"] + (simulator ? ["--simulator"] : []),
            environment: ["DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite"],
            capturingStandardOutput: true
        )
        let status = try await herald.waitForExit(timeout: .seconds(30))
        #expect(status == 2, "log:\n\(herald.log)")
        // The log handler writes on its own thread: the line is there, not necessarily last.
        let lines = herald.log.split(separator: "\n")
        #expect(
            lines.filter { $0.hasPrefix("herald serve:") } == [
                "herald serve: cannot listen on 127.0.0.1:\(port): Address already in use; "
                    + "set PORT or --port to a free port"
            ],
            "log:\n\(herald.log)"
        )
        #expect(!herald.log.contains("not listening"))
        #expect(!herald.log.contains("simulator"), "the simulator did not start; log:\n\(herald.log)")
        #expect(!herald.log.contains("herald.jobs"), "the job worker did not start; log:\n\(herald.log)")
    }
}
