import AsyncTestSupport
import Foundation
import HeraldCore
import Testing

@Suite struct BatchedLineWriterTests {
    /// A temporary file opened for appending, and its contents.
    final class TemporaryFile {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("herald-lines-\(UUID().uuidString)")
        let descriptor: Int32

        init() throws {
            descriptor = open(url.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
            try #require(descriptor >= 0)
        }

        var lines: [Substring] {
            (try? String(contentsOf: url, encoding: .utf8))?.split(separator: "\n", omittingEmptySubsequences: false)
                ?? []
        }

        deinit {
            close(descriptor)
            try? FileManager.default.removeItem(at: url)
        }
    }

    @Test func linesFromManyThreadsArriveWholeAndInEachThreadsOrder() async throws {
        let file = try TemporaryFile()
        let writer = BatchedLineWriter(fileDescriptor: file.descriptor)
        let threads = 4
        let perThread = 5_000
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<threads {
                group.addTask {
                    for index in 0..<perThread {
                        writer.write(
                            "t\(thread) \(index) " + String(repeating: "x", count: index % 97),
                            urgent: index % 500 == 0
                        )
                    }
                }
            }
        }
        writer.flush()
        let lines = file.lines
        #expect(lines.count == threads * perThread + 1)  // the last newline leaves an empty tail
        #expect(lines.last == "")
        var next = [Int](repeating: 0, count: threads)
        for line in lines.dropLast() {
            let fields = line.split(separator: " ")
            let thread = try #require(Int(fields[0].dropFirst()))
            let index = try #require(Int(fields[1]))
            #expect(index == next[thread], "thread \(thread): line \(index) after \(next[thread] - 1)")
            #expect(fields.count == (index % 97 == 0 ? 2 : 3))
            next[thread] = index + 1
        }
        #expect(next == [Int](repeating: perThread, count: threads))
    }

    @Test func anUrgentLineIsWrittenBeforeWriteReturnsAfterEverythingBeforeIt() throws {
        let file = try TemporaryFile()
        let writer = BatchedLineWriter(fileDescriptor: file.descriptor)
        for index in 0..<100 { writer.write("routine \(index)", urgent: false) }
        writer.write("urgent", urgent: true)
        let lines = file.lines
        #expect(lines.count == 102)
        #expect(lines[99] == "routine 99")
        #expect(lines[100] == "urgent")
    }

    @Test func routineLinesAreWrittenWithoutAFlush() async throws {
        let file = try TemporaryFile()
        let writer = BatchedLineWriter(fileDescriptor: file.descriptor)
        writer.write("routine", urgent: false)
        // The writer's thread writes it in its own time, and tells no one: poll the file.
        try await eventually("the writer's thread to write the line") { file.lines.first == "routine" }
        #expect(file.lines == ["routine", ""])
    }

    @Test func aFullBufferIsWrittenByTheCaller() throws {
        let file = try TemporaryFile()
        let writer = BatchedLineWriter(fileDescriptor: file.descriptor)
        let line = String(repeating: "y", count: 1023)
        // More than the limit in one burst: nothing is dropped, whoever writes it.
        let count = BatchedLineWriter.limit / 1024 * 3
        for _ in 0..<count { writer.write(line, urgent: false) }
        writer.flush()
        #expect(file.lines.count == count + 1)
        #expect(file.lines.dropLast().allSatisfy { $0 == line })
    }
}
