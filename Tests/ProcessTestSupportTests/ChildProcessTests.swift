import AsyncTestSupport
import Foundation
import Glibc
import ProcessTestSupport
import Testing

@Suite("ChildProcess")
struct ChildProcessTests {
    @Test("standard output and error are captured apart, with the exit code")
    func capturesOutputsAndExitCode() async throws {
        let result = try await ChildProcess.run("/bin/sh", arguments: ["-c", "echo out; echo err >&2; exit 3"])
        #expect(result.termination == .exited(3))
        #expect(result.standardOutput == "out\n")
        #expect(result.standardError == "err\n")
    }

    @Test("standard output can share standard error's pipe")
    func standardOutputIntoStandardError() async throws {
        let child = try ChildProcess(
            executable: "/bin/sh",
            arguments: ["-c", "echo one; echo two >&2; echo three"],
            standardOutput: .standardError,
            standardError: .capture
        )
        #expect(try await child.waitForExit() == .exited(0))
        #expect(await child.standardError.waitForEnd() == "one\ntwo\nthree\n")
        #expect(child.standardOutput.text.isEmpty)
    }

    @Test("inherited standard output and error are this process's own", arguments: [Int32(1), 2])
    func inheritsStandardDescriptor(descriptor: Int32) async throws {
        // The shell names what its descriptor points at on the other, captured, descriptor
        // (`$$` is the shell's own descriptor table, not that of readlink, whose output is a pipe).
        let other = descriptor == 1 ? 2 : 1
        let child = try ChildProcess(
            executable: "/bin/sh",
            arguments: ["-c", "target=$(readlink /proc/$$/fd/\(descriptor)); echo \"$target\" >&\(other)"],
            standardOutput: descriptor == 1 ? .inherit : .capture,
            standardError: descriptor == 2 ? .inherit : .capture
        )
        #expect(try await child.waitForExit() == .exited(0))
        let named = await (descriptor == 1 ? child.standardError : child.standardOutput).waitForEnd()
        let own = try ownTarget(of: descriptor)
        #expect(named == own + "\n")
    }

    /// What this process's `descriptor` points at, as `/proc/self/fd` shows it.
    private func ownTarget(of descriptor: Int32) throws -> String {
        try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(descriptor)")
    }

    @Test("the environment is replaced and the working directory set")
    func environmentAndWorkingDirectory() async throws {
        let directory = FileManager.default.temporaryDirectory.resolvingSymlinksInPath().path
        let result = try await ChildProcess.run(
            "/bin/sh",
            arguments: ["-c", #"echo "$HERALD_CHILD_TEST|${HOME-unset}"; pwd"#],
            environment: ["HERALD_CHILD_TEST": "set"],
            workingDirectory: directory
        )
        #expect(result.standardOutput == "set|unset\n\(directory)\n")
    }

    @Test("the child inherits only its three standard descriptors")
    func noDescriptorLeaks() async throws {
        // Opened without O_CLOEXEC on purpose: only the spawn's close-from action keeps it out.
        let leaky = open("/dev/null", O_RDONLY)
        try #require(leaky >= 0)
        defer { close(leaky) }
        let result = try await ChildProcess.run("/bin/ls", arguments: ["/proc/self/fd"])
        // 0, 1, 2, and the directory ls reads, which takes the lowest free number: with any
        // inherited descriptor that would be a fifth entry.
        #expect(
            result.standardOutput.split(separator: "\n").sorted() == ["0", "1", "2", "3"],
            "\(result.standardError)"
        )
    }

    @Test("the child starts with default signal handling and nothing blocked")
    func defaultSignals() async throws {
        // Servers ignore SIGPIPE; the child must not inherit that (nor any other of signals 1-31).
        _ = Glibc.signal(SIGPIPE, SIG_IGN)
        let result = try await ChildProcess.run("/bin/grep", arguments: ["-E", "^Sig(Blk|Ign):", "/proc/self/status"])
        let masks = result.standardOutput.split(separator: "\n").compactMap { line -> UInt64? in
            UInt64(line.split(separator: "\t").last ?? "", radix: 16)
        }
        try #require(masks.count == 2, "\(result.standardOutput)")
        // Bits 31 and 32 are glibc's own real-time signals (thread cancellation, setxid), which
        // no program handles.
        #expect(masks.map { $0 & 0x7fff_ffff } == [0, 0], "\(result.standardOutput)")
    }

    @Test("a signal ends the child; after the exit none is sent")
    func signalAndWait() async throws {
        let child = try ChildProcess(executable: "/bin/sleep", arguments: ["600"])
        #expect(child.isRunning)
        #expect(child.signal(SIGTERM))
        #expect(try await child.waitForExit() == .signalled(SIGTERM))
        #expect(!child.isRunning)
        #expect(!child.signal(SIGTERM))
    }

    @Test("a wait for output returns when the output matches, before the child exits")
    func waitForOutputMatch() async throws {
        let child = try ChildProcess(
            executable: "/bin/sh",
            arguments: ["-c", "echo starting; echo ready >&2; exec sleep 600"],
            standardOutput: .standardError,
            standardError: .capture
        )
        let text = try await withDeadline("the ready line") {
            try await child.standardError.waitUntil { $0.contains("ready\n") }
        }
        #expect(text == "starting\nready\n")
        #expect(child.isRunning)
        child.signal(SIGKILL)
        #expect(try await child.waitForExit() == .signalled(SIGKILL))
        #expect(try await child.standardError.waitUntil { $0.contains("never") } == nil)
    }

    @Test("a program that does not exist fails to start with the reason")
    func missingProgram() throws {
        let error = #expect(throws: ChildProcessError.self) {
            try ChildProcess(executable: "/nonexistent/herald-test-program")
        }
        #expect(error?.code == ENOENT)
    }

    @Test("many children started at once from many tasks all run")
    func manyConcurrentChildren() async throws {
        let statuses = try await withThrowingTaskGroup(of: ChildProcess.Termination.self) { group in
            for index in 0..<16 {
                group.addTask {
                    let result = try await ChildProcess.run(
                        "/bin/sh",
                        arguments: ["-c", "echo \(index); exit \(index % 7)"]
                    )
                    #expect(result.standardOutput == "\(index)\n")
                    return result.termination
                }
            }
            return try await group.reduce(into: [Int32]()) { $0.append($1.status) }
        }
        #expect(statuses.sorted() == (0..<16).map { Int32($0 % 7) }.sorted())
    }
}
