import DatabaseTestSupport
import Foundation
import HeraldCore
import SocketTestSupport
import Testing

/// A PostgreSQL server of the test's own, in a temporary directory on a free port, so a test can
/// stop and restart it without disturbing the shared server.
///
/// Binaries come from `HERALD_TEST_PG_BIN` (default `/usr/lib/postgresql/15/bin`). PostgreSQL
/// refuses to run as root, so as root the commands run as the `postgres` user via `runuser`.
final class PrivatePostgres: Sendable {
    let directory: URL
    let port: Int
    private let binaries: String

    var url: String { "postgres://postgres@127.0.0.1:\(port)/postgres" }
    private var dataDirectory: String { directory.appendingPathComponent("data").path }

    static func start() async throws -> PrivatePostgres {
        let binaries = ProcessInfo.processInfo.environment["HERALD_TEST_PG_BIN"] ?? "/usr/lib/postgresql/15/bin"
        guard FileManager.default.isExecutableFile(atPath: "\(binaries)/pg_ctl") else {
            throw TestSetupError(
                description: "no pg_ctl in \(binaries): install the postgresql server package or set HERALD_TEST_PG_BIN"
            )
        }
        let directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("herald-pg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if geteuid() == 0 {
            try FileManager.default.setAttributes([.ownerAccountName: "postgres"], ofItemAtPath: directory.path)
        }
        let server = PrivatePostgres(directory: directory, port: try Loopback.freePort(), binaries: binaries)
        do {
            try await server.pgCommand("initdb", ["-D", server.dataDirectory, "-A", "trust", "-U", "postgres", "-N"])
            try await server.start()
        } catch {
            await server.destroy()
            throw error
        }
        return server
    }

    private init(directory: URL, port: Int, binaries: String) {
        self.directory = directory
        self.port = port
        self.binaries = binaries
    }

    func start() async throws {
        try await pgCtl(["start", "-w", "-t", "60"])
    }

    func stop() async throws {
        try await pgCtl(["stop", "-w", "-m", "fast", "-t", "60"])
    }

    /// `pg_ctl restart -m fast`: every connection is terminated, the server comes back.
    func restart() async throws {
        try await pgCtl(["restart", "-w", "-m", "fast", "-t", "60"])
    }

    func destroy() async {
        _ = try? await pgCtl(["stop", "-w", "-m", "immediate", "-t", "30"])
        try? FileManager.default.removeItem(at: directory)
    }

    private func pgCtl(_ arguments: [String]) async throws {
        let options = "-p \(port) -k \(directory.path) -c listen_addresses=127.0.0.1 -c fsync=off"
        try await pgCommand(
            "pg_ctl",
            ["-D", dataDirectory, "-l", directory.appendingPathComponent("log").path, "-o", options] + arguments
        )
    }

    /// Runs one PostgreSQL program (as `postgres` when root); throws with its output on failure.
    ///
    /// Not Foundation's `Process`: it learns of a child's exit when a socket inherited by the child
    /// closes, and the server that `pg_ctl start` leaves running keeps that socket open.
    private func pgCommand(_ program: String, _ arguments: [String]) async throws {
        let executable = "\(binaries)/\(program)"
        let output = directory.appendingPathComponent("\(program).out").path
        let command =
            geteuid() == 0
            ? ["/usr/sbin/runuser", "-u", "postgres", "--", executable] + arguments : [executable] + arguments
        let status = try await Self.spawner.run { try Self.spawnAndWait(command, output: output) }
        guard status == 0 else {
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            let log = (try? String(contentsOf: directory.appendingPathComponent("log"), encoding: .utf8)) ?? ""
            throw TestSetupError(
                description: "\(program) \(arguments.joined(separator: " ")) failed (\(status)): \(text)\n\(log)"
            )
        }
    }

    /// Waiting for a child blocks a thread: not one of the cooperative pool's.
    private static let spawner = BlockingExecutor(name: "test-spawn", threadCount: 2)

    /// Starts `command` with stdin from /dev/null and stdout/stderr appended to `output`, waits for
    /// it, and returns its exit status (128 + signal when killed).
    private static func spawnAndWait(_ command: [String], output: String) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o666)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let arguments = command.map { strdup($0) } + [nil]
        defer { arguments.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, command[0], &actions, nil, arguments, environ)
        guard result == 0 else {
            throw TestSetupError(description: "cannot start \(command[0]): \(String(cString: strerror(result)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw TestSetupError(description: "waitpid failed: errno \(errno)") }
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

}
