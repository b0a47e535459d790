import Testing

@testable import HTTP2

/// The rules of the client session's inbox without sockets: when a submission wakes the loop,
/// when it waits for the coalescing window, and what rejects it.
@Suite struct ClientSessionInboxTests {
    typealias Inbox = ClientSessionInbox<Int>

    static func describe(_ decision: Inbox.SubmitDecision) -> String {
        switch decision {
        case .rejected(let error): "rejected \(error.code)"
        case .queued: "queued"
        case .queuedDrainNeeded: "drain"
        }
    }

    /// Drains like the loop does; returns the submissions taken and whether the window timer must
    /// be armed.
    static func drain(
        _ inbox: inout Inbox,
        _ cause: Inbox.DrainCause,
        coalescing: Bool = true,
        isClosed: Bool = false
    ) -> (submissions: [Int], cancellations: [Int], armTimer: Bool) {
        var submissions: [Int] = []
        var cancellations: [Int] = []
        let arm = inbox.drain(
            cause,
            submissions: &submissions,
            cancellations: &cancellations,
            coalescing: coalescing,
            isClosed: isClosed
        )
        return (submissions, cancellations, arm)
    }

    @Test("without a window every batch queues one drain; awaited and completion requests alike")
    func noWindow() {
        var inbox = Inbox()
        let result1 = inbox.submit(1, mayWaitForWindow: true)
        #expect(Self.describe(result1) == "drain")
        let result2 = inbox.submit(2, mayWaitForWindow: false)
        #expect(Self.describe(result2) == "queued")
        let drained = Self.drain(&inbox, .queuedTask, coalescing: false)
        #expect(drained.submissions == [1, 2])
        #expect(!drained.armTimer)
        let result3 = inbox.submit(3, mayWaitForWindow: true)
        #expect(Self.describe(result3) == "drain")
    }

    @Test("with a window: requests that may wait arm it and wait for its timer; an awaited one drains at once")
    func window() {
        var inbox = Inbox()
        // The first request after a quiet window drains at once and arms the window.
        let result4 = inbox.submit(1, mayWaitForWindow: true)
        #expect(Self.describe(result4) == "drain")
        var drained = Self.drain(&inbox, .queuedTask)
        #expect(drained.submissions == [1])
        #expect(drained.armTimer)
        // Within the window they wait for the timer.
        let result5 = inbox.submit(2, mayWaitForWindow: true)
        #expect(Self.describe(result5) == "queued")
        let result6 = inbox.submit(3, mayWaitForWindow: true)
        #expect(Self.describe(result6) == "queued")
        drained = Self.drain(&inbox, .windowTimer)
        #expect(drained.submissions == [2, 3])
        #expect(drained.armTimer)  // load goes on: the next window is armed
        // An awaited send does not wait, and takes the waiting ones along.
        let result7 = inbox.submit(4, mayWaitForWindow: true)
        #expect(Self.describe(result7) == "queued")
        let result8 = inbox.submit(5, mayWaitForWindow: false)
        #expect(Self.describe(result8) == "drain")
        drained = Self.drain(&inbox, .queuedTask)
        #expect(drained.submissions == [4, 5])
        #expect(!drained.armTimer)  // the window is still armed
        // A whole window without requests: the timer's drain arms nothing.
        drained = Self.drain(&inbox, .windowTimer)
        #expect(drained.submissions.isEmpty)
        #expect(!drained.armTimer)
        let result9 = inbox.submit(6, mayWaitForWindow: true)
        #expect(Self.describe(result9) == "drain")
    }

    @Test("a closed connection arms no window; cancellations never wait for it")
    func closedAndCancellations() {
        var inbox = Inbox()
        _ = inbox.submit(1, mayWaitForWindow: true)
        let result10 = Self.drain(&inbox, .queuedTask, isClosed: true)
        #expect(!result10.armTimer)
        _ = inbox.submit(2, mayWaitForWindow: true)
        let result11 = Self.drain(&inbox, .queuedTask)
        #expect(result11.armTimer)
        let result12 = inbox.submit(3, mayWaitForWindow: true)
        #expect(Self.describe(result12) == "queued")
        let result13 = inbox.cancel(3)
        #expect(result13)
        let result14 = inbox.cancel(4)
        #expect(!result14)  // the drain is already queued
        let drained = Self.drain(&inbox, .queuedTask)
        #expect(drained.submissions == [3])
        #expect(drained.cancellations == [3, 4])
    }

    @Test("drainSoon stops waiting for the window: what is in the inbox drains now")
    func drainSoon() {
        var inbox = Inbox()
        _ = inbox.submit(1, mayWaitForWindow: true)
        _ = Self.drain(&inbox, .queuedTask)
        let result15 = inbox.drainSoon()
        #expect(!result15)  // nothing waits
        let result16 = inbox.submit(2, mayWaitForWindow: true)
        #expect(Self.describe(result16) == "drain")  // the window is off
        let result17 = inbox.drainSoon()
        #expect(!result17)  // a drain is already queued
        #expect(inbox.drainQueued)
        _ = Self.drain(&inbox, .queuedTask)
        #expect(!inbox.drainQueued)
    }

    @Test("a rejection fails new requests at once; the first stays unless a failure replaces a close")
    func rejection() {
        var inbox = Inbox()
        inbox.reject(HTTP2Error(code: .connectionClosed, isSafeToRetry: true, message: "closing"))
        let result18 = inbox.submit(1, mayWaitForWindow: false)
        #expect(Self.describe(result18) == "rejected connection closed")
        inbox.reject(HTTP2Error(code: .goAway, isSafeToRetry: true, message: "goaway"))
        #expect(inbox.rejection?.code == .connectionClosed)
        inbox.reject(
            HTTP2Error(code: .connectionClosed, isSafeToRetry: true, message: "closed"),
            replacingUnlessClosed: true
        )
        #expect(inbox.rejection?.message == "closing")
        inbox.reject(HTTP2Error(code: .pingTimeout, isSafeToRetry: true, message: "ping"), replacingUnlessClosed: true)
        let result19 = inbox.submit(2, mayWaitForWindow: true)
        #expect(Self.describe(result19) == "rejected ping timeout")
        #expect(!inbox.hasSubmissions)
    }
}
