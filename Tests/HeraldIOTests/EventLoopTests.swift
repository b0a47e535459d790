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
        try await waitUntil { loop.isStopped }
        #expect(seen.withLock { $0 } == Array(0..<100))
        #expect(onLoop.withLock { $0.allSatisfy { $0 } })
        #expect(!loop.inEventLoop)
    }

    @Test("a task given to a stopped loop is dropped at once, not kept for good")
    func tasksAfterShutdownAreDropped() async throws {
        let loop = EventLoop(name: "stopped")
        loop.shutdown()
        try await waitUntil { loop.isStopped }
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
        try await Task.sleep(for: .milliseconds(50))
        let didRun = ran.load(ordering: .relaxed)
        #expect(!didRun)
    }

    /// Polls `condition` every 5 ms for up to 10 s (liveness, not timing).
    private func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("condition not met within 10 s")
                return
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
