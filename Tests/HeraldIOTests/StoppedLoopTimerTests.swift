import AsyncTestSupport
import HeraldIO
import Synchronization
import Testing

@Suite struct StoppedLoopTimerTests {
    /// Something a timer captures, to see when the timer is released.
    final class Captured: Sendable {}

    @Test("a timer that never fired is released when its loop stops")
    func pendingTimerIsReleasedOnStop() async throws {
        let loop = EventLoop(name: "timers-stop")
        weak var released: Captured?
        let scheduled = Atomic<Bool>(false)
        do {
            let captured = Captured()
            released = captured
            loop.execute {
                _ = loop.scheduleTimer(after: .seconds(3600)) { withExtendedLifetime(captured) {} }
                scheduled.store(true, ordering: .releasing)
            }
        }
        try await eventually("the timer to be scheduled") { scheduled.load(ordering: .acquiring) }
        #expect(released != nil, "the loop holds the pending timer while it runs")
        loop.shutdown()
        try await eventually("the loop to stop") { loop.isStopped }
        // Before, the stopped loop kept the timer's body, and with it whatever the body captured
        // (typically the handler that scheduled it, which holds the loop: a cycle at exit).
        #expect(released == nil, "the stopped loop must release its pending timers")
    }
}
