import AsyncTestSupport
import HeraldIO
import Synchronization
import Testing

@Suite struct TimerTests {
    @Test("timers fire in deadline order, and timers due at the same time in the order scheduled")
    func timersFireInOrder() async throws {
        let loop = EventLoop(name: "timers-order")
        defer { loop.shutdown() }
        let fired = Mutex<[String]>([])
        let allFired = Latch()
        loop.execute {
            let now = EventLoop.monotonicNanoseconds()
            let millisecond: UInt64 = 1_000_000
            // Deadlines are absolute: however late the loop wakes, the order is the heap's.
            let plan: [(UInt64, String)] = [
                (now + 30 * millisecond, "c"), (now + 10 * millisecond, "a"), (0, "past"),
                (now + 20 * millisecond, "b"), (now + 40 * millisecond, "tie-1"), (now + 40 * millisecond, "tie-2"),
            ]
            for (deadline, name) in plan {
                loop.scheduleTimer(at: deadline) {
                    let count = fired.withLock { fired in
                        fired.append(name)
                        return fired.count
                    }
                    if count == plan.count { allFired.open() }
                }
            }
        }
        try await waitFor(allFired, "every timer to fire")
        #expect(fired.withLock { $0 } == ["past", "a", "b", "c", "tie-1", "tie-2"])
    }

    @Test("a cancelled timer never runs; the timers around it still do")
    func cancelledTimerNeverRuns() async throws {
        let loop = EventLoop(name: "timers-cancel")
        defer { loop.shutdown() }
        let fired = Mutex<[String]>([])
        let last = Latch()
        loop.execute {
            let now = EventLoop.monotonicNanoseconds()
            let millisecond: UInt64 = 1_000_000
            loop.scheduleTimer(at: now + 10 * millisecond) { fired.withLock { $0.append("before") } }
            let cancelled = loop.scheduleTimer(at: now + 20 * millisecond) { fired.withLock { $0.append("cancelled") } }
            loop.scheduleTimer(at: now + 30 * millisecond) {
                fired.withLock { $0.append("after") }
                last.open()
            }
            loop.cancelTimer(cancelled)
        }
        // The last timer's deadline is after the cancelled one's: had it not been cancelled, it
        // would have run before this one.
        try await waitFor(last, "the last timer to fire")
        #expect(fired.withLock { $0 } == ["before", "after"])
    }

    @Test("a timer cancelled by an earlier timer due in the same turn does not run")
    func cancelFromAnotherTimer() async throws {
        let loop = EventLoop(name: "timers-cancel-inside")
        defer { loop.shutdown() }
        let fired = Mutex<[String]>([])
        let done = Latch()
        loop.execute {
            // Both are due at once (deadline 0): the first cancels the second before it runs.
            let second = Mutex<TimerHandle?>(nil)
            loop.scheduleTimer(at: 0) {
                fired.withLock { $0.append("first") }
                if let handle = second.withLock({ $0 }) { loop.cancelTimer(handle) }
                loop.execute { done.open() }
            }
            second.withLock { $0 = loop.scheduleTimer(at: 0) { fired.withLock { $0.append("second") } } }
        }
        try await waitFor(done, "the first timer and the task it queued")
        // Timers due in the same turn run before queued tasks, so "second" would be there now.
        #expect(fired.withLock { $0 } == ["first"])
    }

    @Test("cancelling a timer that already fired, or twice, changes nothing; later timers still fire")
    func cancelAfterFiring() async throws {
        let loop = EventLoop(name: "timers-cancel-late")
        defer { loop.shutdown() }
        let count = Atomic<Int>(0)
        let first = Latch()
        let handle = await onLoop(loop) {
            loop.scheduleTimer(after: .zero) {
                count.add(1, ordering: .relaxed)
                first.open()
            }
        }
        try await waitFor(first, "the timer to fire")
        let second = Latch()
        loop.execute {
            loop.cancelTimer(handle)
            loop.cancelTimer(handle)
            loop.scheduleTimer(after: .zero) {
                count.add(1, ordering: .relaxed)
                second.open()
            }
        }
        try await waitFor(second, "a timer scheduled after the cancellations")
        #expect(count.load(ordering: .relaxed) == 2)
    }
}
