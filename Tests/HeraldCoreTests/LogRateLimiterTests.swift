import HeraldCore
import Synchronization
import Testing

@Suite struct LogRateLimiterTests {
    @Test("one line per key per interval; the next line carries the count of those held back")
    func onePerKeyPerInterval() {
        let clock = ManualClock()
        let limiter = LogRateLimiter<String>(interval: .seconds(1), clock: clock)
        #expect(limiter.admit("BadDeviceToken") == 0)
        #expect(limiter.admit("Unregistered") == 0)
        for _ in 0..<5 { #expect(limiter.admit("BadDeviceToken") == nil) }
        clock.advance(by: .milliseconds(999))
        #expect(limiter.admit("BadDeviceToken") == nil)
        clock.advance(by: .milliseconds(1))
        #expect(limiter.admit("BadDeviceToken") == 6)
        #expect(limiter.admit("BadDeviceToken") == nil)
        #expect(limiter.admit("Unregistered") == 0)
        clock.advance(by: .seconds(5))
        #expect(limiter.admit("BadDeviceToken") == 1)
        #expect(limiter.admit("Unregistered") == 0)
    }

    @Test("keys beyond the limit share one window instead of each getting a line")
    func manyKeysShareAWindow() {
        let clock = ManualClock()
        let limiter = LogRateLimiter<Int>(interval: .seconds(1), clock: clock)
        let limit = LogRateLimiter<Int>.maximumKeys
        for key in 0..<limit { #expect(limiter.admit(key) == 0) }
        #expect(limiter.admit(limit) == 0)
        for key in limit + 1..<limit + 100 { #expect(limiter.admit(key) == nil) }
        #expect(limiter.admit(0) == nil)
        clock.advance(by: .seconds(1))
        // Expired windows make room again.
        #expect(limiter.admit(limit + 200) == 0)
    }
}
