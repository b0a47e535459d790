import DatabaseTestSupport
import Foundation
import HeraldCore
import Synchronization
import Testing

@Suite("BlockingExecutor")
struct BlockingExecutorTests {
    struct Boom: Error {}

    final class Tally: Sendable {
        let value = Mutex<(running: Int, maximum: Int, order: [Int])>((0, 0, []))
    }

    @Test("runs work on its own named threads and returns results and errors")
    func runsOnDedicatedThreads() async throws {
        let executor = BlockingExecutor(name: "test-exec", threadCount: 2)
        defer { executor.shutdown() }
        // The kernel's name for the thread that ran the body.
        let name = try await executor.run { try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8) }
        #expect(name.hasPrefix("test-exec-"))
        #expect(try await executor.run { 6 * 7 } == 42)
        await #expect(throws: Boom.self) { try await executor.run { throw Boom() } }
    }

    @Test("work that has run is released at once, not kept in the queue")
    func finishedWorkIsReleased() async throws {
        let executor = BlockingExecutor(name: "test-release", threadCount: 1)
        weak var released: Tally?
        do {
            let captured = Tally()
            released = captured
            try await executor.run { withExtendedLifetime(captured) {} }
        }
        // The executor is still alive; its thread exits once the queue is drained, so after this
        // nothing but the queue could still hold the finished work item.
        await executor.shutdownGracefully()
        #expect(released == nil, "the executor must not keep finished work and what it captured")
        withExtendedLifetime(executor) {}
    }

    @Test("a single thread runs work one at a time, in order")
    func serialises() async throws {
        let executor = BlockingExecutor(name: "test-serial", threadCount: 1)
        defer { executor.shutdown() }
        let state = Tally()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<50 {
                group.addTask {
                    try await executor.run {
                        state.value.withLock {
                            $0.running += 1
                            $0.maximum = max($0.maximum, $0.running)
                            $0.order.append(index)
                        }
                        // A sleep: each job holds its thread a little, so that overlapping jobs would show.
                        _ = usleep(200)
                        state.value.withLock { $0.running -= 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(state.value.withLock { $0.maximum } == 1)
        #expect(state.value.withLock { $0.order.count } == 50)
    }

    /// How many blocking jobs have reached the rendezvous.
    final class Arrivals: Sendable {
        let count = Atomic(0)
    }

    @Test("blocking work runs in parallel on several threads, off the cooperative pool")
    func parallel() async throws {
        let executor = BlockingExecutor(name: "test-parallel", threadCount: 8)
        defer { executor.shutdown() }
        // A rendezvous: each of eight blocking jobs waits until all eight have arrived. That can
        // only happen when eight threads run them at once; the cooperative pool (two threads
        // here) or a serial executor would leave the waiters to give up after 30 s.
        let arrived = Arrivals()
        let met = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await executor.run {
                        arrived.count.add(1, ordering: .sequentiallyConsistent)
                        for _ in 0..<30_000 {
                            if arrived.count.load(ordering: .sequentiallyConsistent) == 8 { return true }
                            // A blocking job cannot await: it polls the count, 30 s at most.
                            _ = usleep(1000)
                        }
                        return false
                    }
                }
            }
            var all = true
            for try await met in group { all = all && met }
            return all
        }
        #expect(met)
    }

    @Test("after shutdown, queued work finishes and new work is refused")
    func shutdown() async throws {
        let executor = BlockingExecutor(name: "test-shutdown", threadCount: 1)
        let (started, start) = AsyncStream.makeStream(of: Void.self)
        let done = Atomic(false)
        async let slow: Void = executor.run {
            start.yield()
            // A sleep: the job is still running when shutdown comes.
            _ = usleep(50_000)
            done.store(true, ordering: .sequentiallyConsistent)
        }
        for await _ in started { break }
        await executor.shutdownGracefully()
        // Graceful shutdown waited for the work in flight.
        let finished = done.load(ordering: .sequentiallyConsistent)
        #expect(finished)
        try await slow
        let error = await #expect(throws: BlockingExecutorError.self) { try await executor.run { 1 } }
        #expect(error?.isShutDown == true)
        executor.shutdown()  // idempotent
    }
}
