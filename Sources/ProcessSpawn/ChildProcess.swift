import CHeraldShims
import Foundation
import Glibc
import Synchronization

/// A child process started with `posix_spawn`: the worker processes of `herald jobs bench`, and
/// tests that run `herald`, curl, h2load or openssl.
///
/// Foundation's `Process` is not used: on Swift 6.3.1 its `run()` over-reads `dirent.d_name`
/// while it scans `/proc/self/fd` and crashes now and then (swift-corelibs-foundation PR #5472).
///
/// Standard input is `/dev/null`; standard output and error go to `/dev/null`, to this process's
/// own, or to pipes that reader threads collect into ``standardOutput`` and ``standardError``. The
/// child inherits no other descriptor of this process. A waiter thread reaps the child, so
/// ``waitForExit()`` and ``isRunning`` need no polling.
///
/// ```swift
/// let child = try ChildProcess(executable: "/usr/bin/curl", arguments: ["--version"], standardOutput: .capture)
/// let termination = try await child.waitForExit()
/// let version = await child.standardOutput.waitForEnd()
/// ```
public final class ChildProcess: Sendable {
    /// Where standard output or standard error goes.
    public enum Destination: Sendable {
        /// `/dev/null`.
        case discard
        /// A pipe collected into ``ChildProcess/standardOutput`` or ``ChildProcess/standardError``.
        case capture
        /// Standard output only: the same descriptor as standard error, so both interleave there.
        case standardError
        /// This process's own standard output or standard error.
        case inherit
    }

    /// How the child ended.
    public enum Termination: Sendable, Equatable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        /// The exit code, or the number of the signal that ended the child (as Foundation's
        /// `terminationStatus`).
        public var status: Int32 {
            switch self {
            case .exited(let code): code
            case .signalled(let signal): signal
            }
        }

        public var description: String {
            switch self {
            case .exited(let code): "exited with status \(code)"
            case .signalled(let signal): "ended by signal \(signal)"
            }
        }
    }

    /// The child's process id.
    public let pid: Int32
    /// What the child wrote to standard output (empty unless captured).
    public let standardOutput: CapturedOutput
    /// What the child wrote to standard error, and to standard output when that is
    /// ``Destination/standardError`` (empty unless captured).
    public let standardError: CapturedOutput
    private let exit: ExitState

    /// Starts `executable` (a path, not looked up in `PATH`).
    ///
    /// - Parameters:
    ///   - arguments: the arguments after the program name.
    ///   - environment: the child's whole environment; `nil` passes this process's own.
    ///   - workingDirectory: the directory the child starts in; `nil` keeps this process's.
    /// - Throws: ``ChildProcessError`` when a pipe cannot be made or the program cannot be started.
    public init(
        executable: String,
        arguments: [String] = [],
        environment: [String: String]? = nil,
        workingDirectory: String? = nil,
        standardOutput: Destination = .discard,
        standardError: Destination = .discard
    ) throws {
        precondition(standardError != .standardError, "standard error cannot be redirected to itself")
        var errorPipe: Pipe?
        var outputPipe: Pipe?
        do {
            if standardError == .capture { errorPipe = try Pipe() }
            if standardOutput == .capture { outputPipe = try Pipe() }
            pid = try Spawn.start(
                executable: executable,
                arguments: arguments,
                environment: environment,
                workingDirectory: workingDirectory,
                standardOutput: outputPipe.map { .descriptor($0.write) } ?? Spawn.Target(standardOutput),
                standardError: errorPipe.map { .descriptor($0.write) } ?? Spawn.Target(standardError)
            )
        } catch {
            errorPipe?.closeBoth()
            outputPipe?.closeBoth()
            throw error
        }
        // The child holds its own copies now; closing ours lets the readers see the end of
        // output when the child (and anything it passed the descriptor to) exits.
        if let errorPipe { close(errorPipe.write) }
        if let outputPipe { close(outputPipe.write) }
        self.standardOutput = CapturedOutput(reading: outputPipe?.read, name: "\(executable) stdout")
        self.standardError = CapturedOutput(reading: errorPipe?.read, name: "\(executable) stderr")
        exit = ExitState(pid: pid)
    }

    /// Runs `executable` to its end with both outputs captured.
    public static func run(
        _ executable: String,
        arguments: [String] = [],
        environment: [String: String]? = nil,
        workingDirectory: String? = nil
    ) async throws -> (termination: Termination, standardOutput: String, standardError: String) {
        let child = try ChildProcess(
            executable: executable,
            arguments: arguments,
            environment: environment,
            workingDirectory: workingDirectory,
            standardOutput: .capture,
            standardError: .capture
        )
        let termination = try await child.waitForExit()
        let output = await child.standardOutput.waitForEnd()
        let error = await child.standardError.waitForEnd()
        return (termination, output, error)
    }

    /// Whether the child has not exited yet.
    public var isRunning: Bool { exit.termination == nil }

    /// How the child ended, or `nil` while it runs.
    public var termination: Termination? { exit.termination }

    /// Sends `signal` to the child unless it has already exited (its pid may then belong to
    /// another process); returns whether it was sent.
    @discardableResult
    public func signal(_ signal: Int32) -> Bool { exit.signal(signal) }

    /// Waits until the child exits.
    ///
    /// - Throws: `CancellationError` when the waiting task is cancelled (the child keeps running).
    public func waitForExit() async throws -> Termination { try await exit.wait() }

    deinit {
        // A caller that fails early (a test, a benchmark) must not leave a server running after it.
        exit.signal(SIGKILL)
    }
}

/// A pipe made with `O_CLOEXEC` on both ends.
private struct Pipe {
    let read: Int32
    let write: Int32

    init() throws {
        var fds: (Int32, Int32) = (-1, -1)
        // Safe: `fds` is two contiguous Int32s (a homogeneous tuple), exactly the `int[2]` the C
        // function writes, and the pointer does not outlive the call.
        let result = withUnsafeMutableBytes(of: &fds) {
            cherald_pipe_cloexec($0.baseAddress!.assumingMemoryBound(to: Int32.self))
        }
        guard result == 0 else { throw ChildProcessError(operation: "pipe2", code: errno) }
        (read, write) = fds
    }

    func closeBoth() {
        close(read)
        close(write)
    }
}

/// A system call that failed while starting or watching a child process.
public struct ChildProcessError: Error, CustomStringConvertible {
    public var operation: String
    public var code: Int32

    public var description: String { "\(operation) failed: \(String(cString: strerror(code)))" }
}
