import AsyncTestSupport
import HeraldCore
import Synchronization
import Testing

@Suite("Group commit")
struct GroupCommitTests {
    /// Records each batch it is given and holds the first one until `release` opens, so the test
    /// can line callers up behind it.
    final class Recorder: Sendable {
        let batches = Mutex<[[Int]]>([])
        let release = Latch()

        func run(_ items: [Int]) async -> [Result<Int, any Error>] {
            let first = batches.withLock { batches in
                batches.append(items)
                return batches.count == 1
            }
            if first { try? await release.wait() }
            return items.map { $0 < 0 ? .failure(Refused(value: $0)) : .success($0 * 10) }
        }
    }

    struct Refused: Error, Equatable {
        var value: Int
    }

    /// Starts the first caller, waits until its batch runs, then lines up `count` more behind it.
    static func lineUp(
        _ commit: GroupCommit<Int, Int>,
        _ recorder: Recorder,
        items: [Int]
    ) async throws -> [Task<Result<Int, any Error>, Never>] {
        // Unstructured tasks: the callers outlive this function, and the test awaits each one's
        // own result after releasing the first batch.
        let first = Task { await submit(1, to: commit) }
        try await eventually("the first batch runs") { recorder.batches.withLock { $0.count } == 1 }
        var tasks = [first]
        for item in items { tasks.append(Task { await submit(item, to: commit) }) }
        try await eventually("every caller waits") { commit.waiting == items.count }
        return tasks
    }

    static func submit(_ item: Int, to commit: GroupCommit<Int, Int>) async -> Result<Int, any Error> {
        do {
            return .success(try await commit.submit(item))
        } catch {
            return .failure(error)
        }
    }

    @Test("callers that arrive while a batch runs go together in the next one, each with its own result")
    func batches() async throws {
        let recorder = Recorder()
        let commit = GroupCommit<Int, Int>(maximumBatch: 100) { await recorder.run($0) }
        let tasks = try await Self.lineUp(commit, recorder, items: Array(2...11))
        recorder.release.open()
        var answers: [Int] = []
        for task in tasks { answers.append(try await task.value.get()) }
        #expect(answers == (1...11).map { $0 * 10 })
        let batches = recorder.batches.withLock { $0 }
        #expect(batches.count == 2)
        #expect(batches.first == [1])
        #expect(batches.last?.sorted() == Array(2...11))
        #expect(commit.waiting == 0)

        // Idle again: the next caller leads a batch of its own at once.
        #expect(try await commit.submit(12) == 120)
        #expect(recorder.batches.withLock { $0.last } == [12])
    }

    @Test("a batch holds at most maximumBatch items; the rest follow in order")
    func maximum() async throws {
        let recorder = Recorder()
        let commit = GroupCommit<Int, Int>(maximumBatch: 4) { await recorder.run($0) }
        let tasks = try await Self.lineUp(commit, recorder, items: Array(2...11))
        recorder.release.open()
        for task in tasks { _ = try await task.value.get() }
        let sizes = recorder.batches.withLock { $0.map(\.count) }
        #expect(sizes == [1, 4, 4, 2])
        #expect(recorder.batches.withLock { $0.flatMap { $0 } }.sorted() == Array(1...11))
    }

    @Test("a failed item fails only its caller")
    func failures() async throws {
        let recorder = Recorder()
        let commit = GroupCommit<Int, Int>(maximumBatch: 100) { await recorder.run($0) }
        let tasks = try await Self.lineUp(commit, recorder, items: [2, -3, 4])
        recorder.release.open()
        #expect(try await tasks[1].value.get() == 20)
        await #expect(throws: Refused(value: -3)) { try await tasks[2].value.get() }
        #expect(try await tasks[3].value.get() == 40)
    }

    @Test("a run that throws fails every item of its batch")
    func thrown() async throws {
        let commit = GroupCommit<Int, Int>(maximumBatch: 10) { _ in throw Refused(value: 0) }
        await #expect(throws: Refused(value: 0)) { try await commit.submit(1) }
    }

    @Test("a run that returns the wrong number of results fails its whole batch")
    func mismatch() async throws {
        let commit = GroupCommit<Int, Int>(maximumBatch: 10) { _ in [] }
        await #expect(throws: GroupCommitError.resultCountMismatch(1, 0)) { try await commit.submit(1) }
    }
}
