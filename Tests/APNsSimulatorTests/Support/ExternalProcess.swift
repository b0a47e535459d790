import Foundation
import Testing

/// Runs a command-line tool (curl, h2load) without blocking a thread of the cooperative pool:
/// output goes to temporary files, and the exit is awaited through the termination handler.
enum ExternalProcess {
    struct Output: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The tool's path, or a test failure naming the Debian package to install.
    static func locate(_ name: String, package: String) throws -> String {
        for directory in ["/usr/bin", "/usr/local/bin", "/bin"] {
            let path = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        throw TestFailure(
            "\(name) is not installed: install the Debian package \(package) (scripts/bootstrap.sh --test does)"
        )
    }

    static func run(_ executable: String, _ arguments: [String]) async throws -> Output {
        let directory = FileManager.default.temporaryDirectory
        let stdoutPath = directory.appendingPathComponent("herald-sim-\(UUID().uuidString).out").path
        let stderrPath = directory.appendingPathComponent("herald-sim-\(UUID().uuidString).err").path
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        defer {
            try? FileManager.default.removeItem(atPath: stdoutPath)
            try? FileManager.default.removeItem(atPath: stderrPath)
        }
        let stdout = try FileHandle(forWritingTo: URL(fileURLWithPath: stdoutPath))
        let stderr = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        let status = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<Int32, any Error>) in
            process.terminationHandler = { finished in continuation.resume(returning: finished.terminationStatus) }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        try? stdout.close()
        try? stderr.close()
        return Output(
            status: status,
            stdout: (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
        )
    }
}
