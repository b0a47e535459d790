import Foundation
import ProcessTestSupport
import Testing

/// Runs a command-line tool (curl, h2load) without blocking a thread of the cooperative pool
/// (ProcessTestSupport's threads read its output and reap it).
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
        let result = try await ChildProcess.run(executable, arguments: arguments)
        return Output(status: result.termination.status, stdout: result.standardOutput, stderr: result.standardError)
    }
}
