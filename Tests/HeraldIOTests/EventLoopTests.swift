import AsyncTestSupport
import HeraldIO
import Synchronization
import Testing

@Suite struct EventLoopTests {
    /// Something a task captures, to see when the task is released.
    final class Captured: Sendable {}

    @Test("tasks run in order on the loop's thread, and shutdown runs the ones queued before it")
    func tasksRunInOrderThenShutdown() async throws {
        let loop = EventLoop(name: "order")
        let seen = Mutex<[Int]>([])
        let onLoop = Mutex<[Bool]>([])
        for index in 0..<100 {
            loop.execute {
                seen.withLock { $0.append(index) }
                onLoop.withLock { $0.append(loop.inEventLoop) }
            }
        }
        loop.shutdown()
        try await eventually("the loop to stop") { loop.isStopped }
        #expect(seen.withLock { $0 } == Array(0..<100))
        #expect(onLoop.withLock { $0.allSatisfy { $0 } })
        #expect(!loop.inEventLoop)
    }

    @Test("a task given to a stopped loop is dropped at once, not kept for good")
    func tasksAfterShutdownAreDropped() async throws {
        let loop = EventLoop(name: "stopped")
        loop.shutdown()
        try await eventually("the loop to stop") { loop.isStopped }
        let ran = Atomic<Bool>(false)
        weak var released: Captured?
        do {
            let captured = Captured()
            released = captured
            loop.execute {
                withExtendedLifetime(captured) { ran.store(true, ordering: .relaxed) }
            }
        }
        // Before, the task waited in the stopped loop's queue, holding what it captured, and a
        // wake-up could still be written to the loop's eventfd after the loop had closed it.
        #expect(released == nil, "the dropped task must release what it captured")
        // Released means the closure is gone: it cannot run later either.
        let didRun = ran.load(ordering: .relaxed)
        #expect(!didRun)
    }
}
