import AsyncTestSupport
import Foundation
import ProcessTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A `herald` process started from the build directory, for end-to-end tests of the executable.
final class HeraldProcess: Sendable {
    /// The `herald` binary beside the test bundle (SwiftPM builds every product before the tests).
    static var binary: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("herald")
    }

    let child: ChildProcess

    /// `capturingStandardOutput`: standard output goes to ``log`` too (otherwise nowhere).
    init(arguments: [String], environment: [String: String], capturingStandardOutput: Bool = false) throws {
        var merged = ProcessInfo.processInfo.environment
        for name in ["PORT", "HOST", "DATABASE_URL", "LOG_LEVEL", "LOG_FORMAT"] { merged[name] = nil }
        merged.merge(environment) { _, new in new }
        child = try ChildProcess(
            executable: Self.binary.path,
            arguments: arguments,
            environment: merged,
            standardOutput: capturingStandardOutput ? .standardError : .discard,
            standardError: .capture
        )
    }

    /// Standard error (and standard output, when captured) so far.
    var log: String { child.standardError.text }

    var isRunning: Bool { child.isRunning }

    /// Waits for the "herald listening" line and returns the port it names.
    func listeningPort(timeout: Duration = .seconds(20)) async throws -> Int {
        let output = child.standardError
        let log = try await withDeadline("herald's listening line; its log:\n\(self.log)", timeout: timeout) {
            try await output.waitUntil { Self.port(in: $0) != nil }
        }
        guard let log, let port = Self.port(in: log) else {
            Issue.record("herald exited without listening; its log:\n\(self.log)")
            throw CancellationError()
        }
        return port
    }

    private static func port(in log: String) -> Int? {
        guard let range = log.range(of: #"address=http://[^ ]*:(\d+)"#, options: .regularExpression) else { return nil }
        let match = log[range]
        guard let colon = match.lastIndex(of: ":") else { return nil }
        return Int(match[match.index(after: colon)...])
    }

    /// Waits for the first line that contains `text` and `count` complete lines after it, and
    /// returns those lines.
    func lines(
        from text: String,
        followedBy count: Int = 0,
        timeout: Duration = .seconds(10)
    ) async throws -> [Substring] {
        let output = child.standardError
        let log = try await withDeadline("a line with \"\(text)\"; output:\n\(self.log)", timeout: timeout) {
            try await output.waitUntil { Self.lines(in: $0, from: text, count: count) != nil }
        }
        guard let log, let lines = Self.lines(in: log, from: text, count: count) else {
            Issue.record("herald exited without printing \"\(text)\"; output:\n\(self.log)")
            throw CancellationError()
        }
        return lines
    }

    private static func lines(in log: String, from text: String, count: Int) -> [Substring]? {
        guard let start = log.range(of: text) else { return nil }
        let lines = log[start.lowerBound...].split(separator: "\n", omittingEmptySubsequences: false)
        // The last element is what follows the last newline: an unfinished line.
        guard lines.count >= count + 2 else { return nil }
        return Array(lines[...count])
    }

    /// Waits for the process to exit and for the last of its output, so that ``log`` is complete;
    /// returns its exit status (the signal number when a signal ended it). Fails the test when
    /// it has not exited within `timeout`.
    func waitForExit(timeout: Duration) async throws -> Int32 {
        let child = self.child
        return try await withDeadline("herald's exit; its log:\n\(log)", timeout: timeout) {
            let termination = try await child.waitForExit()
            _ = await child.standardError.waitForEnd()
            return termination
        }.status
    }

    func signal(_ number: Int32) { child.signal(number) }
}

/// One HTTP request over URLSession; returns status and body.
func fetch(
    _ url: String,
    method: String = "GET",
    headers: [String: String] = [:],
    body: String? = nil
) async throws -> (status: Int, body: String) {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = method
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    request.httpBody = body.map { Data($0.utf8) }
    let (data, response) = try await URLSession.shared.data(for: request)
    let status = (response as? HTTPURLResponse)?.statusCode ?? 0
    return (status, String(decoding: data, as: UTF8.self))
}
