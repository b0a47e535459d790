import Testing

@testable import HTTP2

/// How the HTTP/2 client session keeps request deadlines, without sockets: the connection's
/// default timeout and requests' own timeouts together, and what ended requests leave behind.
@Suite struct ClientSessionDeadlineTests {
    typealias State = ClientSessionState<Int>

    @Test("default and own deadlines together come due in time order, whichever way they were submitted")
    func mixedDeadlines() {
        var state = State(defaultTimeout: 100, maximumConcurrentStreams: 10)
        _ = state.settingsReceived(maxConcurrentStreams: 0)
        var actions: [State.Action] = []
        // Due at 100, 40 (own), 520 (own), 130, 150 (own).
        let submissions: [(request: Int, at: UInt64, own: UInt64?)] = [
            (1, 0, nil), (2, 10, 30), (3, 20, 500), (4, 30, nil), (5, 40, 110),
        ]
        let ids = submissions.map {
            state.submit($0.request, at: $0.at, timeoutOverride: $0.own, cancelled: false, actions: &actions)
        }
        #expect(actions.isEmpty)
        var timeline: [String] = []
        func expire(at now: UInt64) {
            actions = []
            state.deadlinesPassed(now: now, actions: &actions)
            timeline += actions.map(ClientSessionStateTests.describe)
        }
        let first = state.nextDeadline()
        #expect(first == 40)
        expire(at: 40)
        let second = state.nextDeadline()
        #expect(second == 100)
        // Request 1 is cancelled: its deadline no longer counts.
        if let id = ids[0] { state.cancel(id, actions: &actions) }
        let third = state.nextDeadline()
        #expect(third == 130)
        expire(at: 200)
        let fourth = state.nextDeadline()
        #expect(fourth == 520)
        expire(at: 520)
        let last = state.nextDeadline()
        #expect(last == nil)
        #expect(
            timeline == [
                "fail 2 request timeout safe", "fail 4 request timeout safe", "fail 5 request timeout safe",
                "fail 3 request timeout safe",
            ]
        )
    }

    @Test(
        "entries of ended requests behind one that still waits are dropped in bulk, not kept until it ends",
        arguments: [nil, 1_000] as [UInt64?]
    )
    func endedEntriesAreDropped(ownTimeout: UInt64?) {
        var state = State(defaultTimeout: 1_000, maximumConcurrentStreams: 10)
        _ = state.settingsReceived(maxConcurrentStreams: 0)
        var actions: [State.Action] = []
        let waiting = state.submit(0, at: 0, timeoutOverride: ownTimeout, cancelled: false, actions: &actions)
        for request in 1...5_000 {
            let at = UInt64(request)
            if let id = state.submit(request, at: at, timeoutOverride: ownTimeout, cancelled: false, actions: &actions)
            {
                state.cancel(id, actions: &actions)
            }
        }
        #expect(actions.count == 5_000)
        #expect(state.deadlineEntries < 2_048, "ended requests' deadlines pile up behind the waiting one")
        let next = state.nextDeadline()
        #expect(next == 1_000)
        actions = []
        state.deadlinesPassed(now: 1_000, actions: &actions)
        #expect(actions.map(ClientSessionStateTests.describe) == ["fail 0 request timeout safe"])
        #expect(waiting != nil)
    }
}
