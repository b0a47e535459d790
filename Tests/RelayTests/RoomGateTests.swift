import Foundation
import Synchronization
import Testing

@testable import Relay

/// HTTP threads pause at the gate while the relay's queue is full, and only briefly.
@Suite("Relay room gate")
struct RoomGateTests {
    private static func noProgress() -> Int { 0 }

    @Test func withRoomAlreadyThereNothingWaits() {
        let gate = RoomGate(maximumPause: .seconds(30), holdOff: .seconds(30))
        let start = ContinuousClock.now
        #expect(gate.pause(until: { true }, progress: Self.noProgress) == .room(paused: false))
        #expect(ContinuousClock.now - start < .seconds(5))
    }

    @Test func aPausedThreadGoesOnWhenRoomIsMadeAndTheGateOpened() {
        let gate = RoomGate(maximumPause: .seconds(30), holdOff: .seconds(30))
        let room = Atomic(false)
        let start = ContinuousClock.now
        let opener = Thread {
            Thread.sleep(forTimeInterval: 0.05)
            room.store(true, ordering: .sequentiallyConsistent)
            gate.open()
        }
        opener.start()
        #expect(
            gate.pause(until: { room.load(ordering: .sequentiallyConsistent) }, progress: Self.noProgress)
                == .room(paused: true)
        )
        // Woken by `open()`, not by the 30 s limit.
        #expect(ContinuousClock.now - start < .seconds(10))
    }

    @Test func aPauseWithoutProgressEndsAtItsLimitAndThenThreadsDoNotPauseForTheHoldOff() {
        let gate = RoomGate(maximumPause: .seconds(2), holdOff: .seconds(600))
        let start = ContinuousClock.now
        #expect(gate.pause(until: { false }, progress: Self.noProgress) == .timedOut)
        #expect(ContinuousClock.now - start >= .seconds(2))
        // Within the hold-off the answer comes at once (not after another 2 s), with or without room.
        let again = ContinuousClock.now
        #expect(gate.pause(until: { false }, progress: Self.noProgress) == .heldOff)
        #expect(gate.pause(until: { true }, progress: Self.noProgress) == .room(paused: false))
        #expect(ContinuousClock.now - again < .seconds(1))
    }

    @Test func aPauseThatEndsWithoutRoomButWithProgressStartsNoHoldOff() {
        let gate = RoomGate(maximumPause: .milliseconds(300), holdOff: .seconds(600))
        let answered = Atomic(0)
        // Pushes are answered, but the room they make is taken elsewhere (by requests waiting in tasks).
        let progress: () -> Int = { answered.add(1, ordering: .relaxed).newValue }
        #expect(gate.pause(until: { false }, progress: progress) == .timedOut)
        // The next request pauses again instead of being held off.
        let start = ContinuousClock.now
        #expect(gate.pause(until: { false }, progress: progress) == .timedOut)
        #expect(ContinuousClock.now - start >= .milliseconds(300))
    }

    @Test func aZeroPauseNeverWaits() {
        let gate = RoomGate(maximumPause: .zero, holdOff: .seconds(30))
        #expect(gate.pause(until: { false }, progress: Self.noProgress) == .heldOff)
        #expect(gate.pause(until: { true }, progress: Self.noProgress) == .room(paused: false))
        // Opening a gate nobody waits at is harmless.
        gate.open()
    }

    @Test func everyPausedThreadIsWokenByOneOpening() {
        let gate = RoomGate(maximumPause: .seconds(30), holdOff: .seconds(30))
        let room = Atomic(false)
        let outcomes = Mutex<[RoomGate.Outcome]>([])
        let done = DispatchGroup()
        for _ in 0..<3 {
            done.enter()
            Thread {
                let outcome = gate.pause(until: { room.load(ordering: .sequentiallyConsistent) }, progress: { 0 })
                outcomes.withLock { $0.append(outcome) }
                done.leave()
            }.start()
        }
        Thread.sleep(forTimeInterval: 0.1)
        room.store(true, ordering: .sequentiallyConsistent)
        gate.open()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(outcomes.withLock { $0.count } == 3)
        #expect(outcomes.withLock { $0.allSatisfy(\.hasRoom) })
    }
}
