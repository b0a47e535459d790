import Foundation
import HeraldCore
import Testing

@Suite struct ManualClockTests {
    private let start = Date(timeIntervalSince1970: 1_790_000_000)

    @Test func sleepersWakeWhenTheClockPassesTheirDeadline() async throws {
        let clock = ManualClock(start)
        try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask {
                try await clock.sleep(until: self.start.addingTimeInterval(10))
                return 10
            }
            group.addTask {
                try await clock.sleep(for: .seconds(5))
                return 5
            }
            try await clock.waitForSleep(within: 120, matching: { $0 == self.start.addingTimeInterval(10) })
            try await clock.waitForSleep(within: 120, matching: { $0 == self.start.addingTimeInterval(5) })
            #expect(clock.nextDeadline == start.addingTimeInterval(5))
            clock.advance(by: .seconds(4))
            #expect(clock.nextDeadline == start.addingTimeInterval(5))
            clock.advance(1)
            #expect(try await group.next() == 5)
            #expect(clock.nextDeadline == start.addingTimeInterval(10))
            clock.set(start.addingTimeInterval(60))
            #expect(try await group.next() == 10)
            #expect(clock.nextDeadline == nil)
        }
        #expect(clock.sleepCount == 2)
    }

    @Test func aDeadlineAlreadyPassedReturnsAtOnce() async throws {
        let clock = ManualClock(start)
        try await clock.sleep(until: start)
        try await clock.sleep(for: .zero)
        #expect(clock.nextDeadline == nil)
    }

    @Test func cancellingASleeperEndsItWithCancellationError() async throws {
        let clock = ManualClock(start)
        let sleeper = Task { try await clock.sleep(for: .seconds(3600)) }
        try await clock.waitForSleep(within: 120)
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(clock.nextDeadline == nil)
    }

    @Test func uptimeMovesForwardOnlyWhileTheWallTimeMayGoBack() {
        let clock = ManualClock(start)
        #expect(clock.uptime() == .zero)
        clock.advance(by: .milliseconds(1500))
        #expect(clock.uptime() == .milliseconds(1500))
        clock.set(start.addingTimeInterval(-60))
        #expect(clock.now() == start.addingTimeInterval(-60))
        #expect(clock.uptime() == .milliseconds(1500))
        clock.advance(2)
        #expect(clock.uptime() == .milliseconds(3500))
        #expect(clock.elapsed(since: .milliseconds(1500)) == .seconds(2))
    }

    @Test func aJumpMovesTheWallTimeAloneAndWakesTheSleepsItPasses() async throws {
        let clock = ManualClock(start)
        let sleeper = Task { try await clock.sleep(until: self.start.addingTimeInterval(3600)) }
        try await clock.waitForSleep(within: 120)
        clock.jump(to: start.addingTimeInterval(3600))
        try await sleeper.value
        #expect(clock.now() == start.addingTimeInterval(3600))
        #expect(clock.uptime() == .zero)
        clock.advance(by: .seconds(2))
        #expect(clock.uptime() == .seconds(2))
    }

    @Test func advancingToTheNextDeadlineStepsASleepingLoop() async throws {
        let clock = ManualClock(start)
        let loop = Task {
            for _ in 0..<3 { try await clock.sleep(for: .milliseconds(250)) }
        }
        for step in 1...3 {
            let reached = try await clock.advanceToNextDeadline(within: 120)
            #expect(reached == start.addingTimeInterval(0.25 * Double(step)))
        }
        try await loop.value
        #expect(clock.sleepCount == 3)
        #expect(clock.uptime() == .milliseconds(750))
        await #expect(throws: ManualClockError.self) { try await clock.advanceToNextDeadline(within: 0.05) }
    }

    @Test func waitingForASleepThatNeverComesThrows() async {
        let clock = ManualClock(start)
        await #expect(throws: ManualClockError.self) { try await clock.waitForSleep(within: 0.05) }
    }

    @Test func theSystemClockReadsTheWallClockAndAMonotonicUptime() async throws {
        let clock = SystemClock()
        let before = Date()
        let reading = clock.now()
        #expect(reading >= before && reading <= Date())
        let first = clock.uptime()
        try await clock.sleep(for: .milliseconds(1))
        #expect(clock.uptime() > first)
    }

    @Test func durationsConvertToAndFromSeconds() {
        #expect(Duration.milliseconds(1500).timeInterval == 1.5)
        #expect(Duration(timeInterval: 0.25) == .milliseconds(250))
        #expect(Duration(timeInterval: 1e300) == .nanoseconds(Int64.max))
        #expect(Duration(timeInterval: -.infinity) == .nanoseconds(Int64.min))
    }
}
