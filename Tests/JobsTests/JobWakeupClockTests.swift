import Foundation
import HeraldCore
import Jobs
import Testing

@Suite struct JobWakeupClockTests {
    /// A timed wait sleeps on the wake-up's clock: moving the manual clock ends it, no real time.
    @Test func aTimedWaitEndsWhenTheManualClockPassesItsDeadline() async throws {
        let clock = ManualClock()
        let wakeup = JobWakeup(clock: clock)
        let deadline = clock.now().addingTimeInterval(3600)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await wakeup.wait(until: deadline) }
            try await clock.waitForSleep(within: 120, matching: { $0 == deadline })
            clock.advance(3600)
            try await group.next()
        }
        #expect(clock.nextDeadline == nil)
    }

    @Test func aSignalEndsTheWaitAndCancelsItsSleep() async throws {
        let clock = ManualClock()
        let wakeup = JobWakeup(clock: clock)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await wakeup.wait(for: .seconds(60)) }
            try await clock.waitForSleep(within: 120)
            wakeup.signal()
            try await group.next()
        }
        #expect(clock.nextDeadline == nil)
    }

}
