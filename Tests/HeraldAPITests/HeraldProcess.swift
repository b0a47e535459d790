import Foundation
import Synchronization
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

    /// Standard error (and standard output, when asked for) collected so far; written by the
    /// pipe's reader thread.
    final class Output: Sendable {
        let text = Mutex<String>("")
    }

    let process: Process
    private let output = Output()
    private let errors = Pipe()

    /// `capturingStandardOutput`: standard output goes to ``log`` too (otherwise nowhere).
    init(arguments: [String], environment: [String: String], capturingStandardOutput: Bool = false) throws {
        process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        var merged = ProcessInfo.processInfo.environment
        for name in ["PORT", "HOST", "DATABASE_URL", "LOG_LEVEL", "LOG_FORMAT"] { merged[name] = nil }
        merged.merge(environment) { _, new in new }
        process.environment = merged
        process.standardOutput = capturingStandardOutput ? errors : FileHandle.nullDevice
        process.standardError = errors
        let output = self.output
        errors.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if !data.isEmpty { output.text.withLock { $0 += String(decoding: data, as: UTF8.self) } }
        }
        try process.run()
    }

    var log: String { output.text.withLock { $0 } }

    /// Waits for the "herald listening" line and returns the port it names.
    func listeningPort(timeout: Duration = .seconds(20)) async throws -> Int {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let range = log.range(of: #"address=http://[^ ]*:(\d+)"#, options: .regularExpression) {
                let match = log[range]
                if let colon = match.lastIndex(of: ":"), let port = Int(match[match.index(after: colon)...]) {
                    return port
                }
            }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("herald did not start listening; its log:\n\(log)")
        throw CancellationError()
    }

    /// Waits for the process to exit and returns its status.
    func waitForExit(timeout: Duration) async throws -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            if ContinuousClock.now > deadline { return nil }
            try await Task.sleep(for: .milliseconds(50))
        }
        return process.terminationStatus
    }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    deinit {
        if process.isRunning { process.terminate() }
        errors.fileHandleForReading.readabilityHandler = nil
    }
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
