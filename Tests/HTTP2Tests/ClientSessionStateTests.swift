import Foundation
import Testing

@testable import HTTP2

/// The HTTP/2 client session's rules without sockets: events go into a ``ClientSessionState``
/// (requests are plain integers here), and the state and actions that come out are checked.
@Suite struct ClientSessionStateTests {
    typealias State = ClientSessionState<Int>

    /// An action as a short line, so tables can list them.
    static func describe(_ action: State.Action) -> String {
        switch action {
        case .succeed(let request): return "succeed \(request)"
        case .fail(let request, .cancelled): return "fail \(request) cancelled"
        case .fail(let request, .error(let error)):
            return "fail \(request) \(error.code)\(error.isSafeToRetry ? " safe" : "")"
        case .resetStream(let streamID): return "reset \(streamID)"
        case .rejectNewRequests(let error): return "reject \(error.code)"
        case .closeConnection(let closing):
            return "close \(closing.error.code)\(closing.graceful ? " graceful" : "")"
                + "\(closing.isFailure ? " failure" : "") retired \(closing.retired)"
        }
    }

    /// A state with the peer's SETTINGS received and `requests` submitted at time 0.
    static func ready(
        limit: Int = 100,
        maximum: Int = 1000,
        defaultTimeout: UInt64? = nil,
        requests: [Int] = []
    ) -> (State, [ClientRequestID]) {
        var state = State(defaultTimeout: defaultTimeout, maximumConcurrentStreams: maximum)
        let result1 = state.settingsReceived(maxConcurrentStreams: limit)
        #expect(result1)
        var actions: [State.Action] = []
        let ids = requests.map { request in
            state.submit(request, at: 0, timeoutOverride: nil, cancelled: false, actions: &actions)!
        }
        #expect(actions.isEmpty)
        return (state, ids)
    }

    /// Opens every stream the state allows, giving them stream ids 1, 3, 5… from `firstStreamID`.
    static func openAll(_ state: inout State, firstStreamID: Int32 = 1) -> [Int] {
        var opened: [Int] = []
        var streamID = firstStreamID
        while let (id, request) = state.nextRequestToOpen() {
            state.streamOpened(id, streamID: streamID)
            streamID += 2
            opened.append(request)
        }
        return opened
    }

    // MARK: stream limit

    struct LimitCase: Sendable, CustomTestStringConvertible {
        var remote: Int
        var maximum: Int
        var requests: Int
        var opened: Int
        var testDescription: String { "peer \(remote), ours \(maximum), \(requests) requests: \(opened) open" }
    }

    @Test(
        "the peer's SETTINGS_MAX_CONCURRENT_STREAMS, capped by the configuration, bounds the open streams",
        arguments: [
            LimitCase(remote: 1, maximum: 1000, requests: 5, opened: 1),
            LimitCase(remote: 100, maximum: 1000, requests: 5, opened: 5),
            LimitCase(remote: 100, maximum: 3, requests: 5, opened: 3),
            LimitCase(remote: 0, maximum: 1000, requests: 5, opened: 0),
        ]
    )
    func streamLimit(_ row: LimitCase) {
        var (state, _) = Self.ready(limit: row.remote, maximum: row.maximum, requests: Array(0..<row.requests))
        let result2 = Self.openAll(&state)
        #expect(result2 == Array(0..<row.opened))
        #expect(state.openCount == row.opened)
        #expect(state.queuedCount == row.requests - row.opened)
        #expect(state.status.maxConcurrentStreams == min(row.remote, row.maximum))
        #expect(state.status.activeStreams == row.opened)
        #expect(state.status.queuedRequests == row.requests - row.opened)
    }

    @Test("no stream opens before the first SETTINGS; a changed limit applies to the next openings")
    func limitChanges() {
        var state = State(defaultTimeout: nil, maximumConcurrentStreams: 1000)
        var actions: [State.Action] = []
        let ids = (0..<4).map { state.submit($0, at: 0, timeoutOverride: nil, cancelled: false, actions: &actions)! }
        let result3 = state.nextRequestToOpen()
        #expect(result3 == nil)
        #expect(!state.status.isUsable)

        let result4 = state.settingsReceived(maxConcurrentStreams: 1)
        #expect(result4)
        #expect(state.status.isUsable)
        let result5 = Self.openAll(&state)
        #expect(result5 == [0])
        // The limit rises: the waiting requests open, in order.
        let result6 = state.settingsReceived(maxConcurrentStreams: 3)
        #expect(!result6)
        let result7 = Self.openAll(&state, firstStreamID: 3)
        #expect(result7 == [1, 2])
        // It falls to 1: nothing opens until the open streams are below it.
        let result8 = state.settingsReceived(maxConcurrentStreams: 1)
        #expect(!result8)
        state.streamClosed(ids[0], errorCode: .noError, status: 200, actions: &actions)
        state.streamClosed(ids[1], errorCode: .noError, status: 200, actions: &actions)
        let result9 = Self.openAll(&state, firstStreamID: 7)
        #expect(result9.isEmpty)
        state.streamClosed(ids[2], errorCode: .noError, status: 200, actions: &actions)
        let result10 = Self.openAll(&state, firstStreamID: 7)
        #expect(result10 == [3])
        #expect(actions.map(Self.describe) == ["succeed 0", "succeed 1", "succeed 2"])
    }

    // MARK: how streams end

    struct CloseCase: Sendable, CustomTestStringConvertible {
        var errorCode: UInt32
        var status: Int
        var expected: String
        var testDescription: String { "error code \(errorCode), status \(status): \(expected)" }
    }

    @Test(
        "a closed stream answers with the response, or fails safe to retry only when not processed",
        arguments: [
            CloseCase(errorCode: 0, status: 200, expected: "succeed 7"),
            CloseCase(errorCode: 0, status: 410, expected: "succeed 7"),
            CloseCase(errorCode: 0, status: 0, expected: "fail 7 protocol error"),
            CloseCase(errorCode: 0, status: 103, expected: "fail 7 protocol error"),
            CloseCase(errorCode: 7, status: 0, expected: "fail 7 stream refused safe"),
            CloseCase(errorCode: 2, status: 0, expected: "fail 7 stream reset"),
            CloseCase(errorCode: 8, status: 200, expected: "fail 7 stream reset"),
        ]
    )
    func streamClosed(_ row: CloseCase) {
        var (state, ids) = Self.ready(requests: [7])
        let result11 = Self.openAll(&state)
        #expect(result11 == [7])
        #expect(state.isReceiving(ids[0]))
        var actions: [State.Action] = []
        state.streamClosed(
            ids[0],
            errorCode: HTTP2ErrorCode(rawValue: row.errorCode),
            status: row.status,
            actions: &actions
        )
        #expect(actions.map(Self.describe) == [row.expected])
        #expect(state.openCount == 0)
        #expect(!state.isReceiving(ids[0]))
    }

    @Test("a response body over the limit resets the stream and fails the request, which stays open until closed")
    func responseTooLarge() {
        var (state, ids) = Self.ready(requests: [1])
        _ = Self.openAll(&state)
        var actions: [State.Action] = []
        state.responseTooLarge(ids[0], limit: 10, actions: &actions)
        #expect(actions.map(Self.describe) == ["reset 1", "fail 1 response too large"])
        #expect(!state.isReceiving(ids[0]))
        #expect(state.openCount == 1)
        actions = []
        state.streamClosed(ids[0], errorCode: .cancel, status: 200, actions: &actions)
        #expect(actions.isEmpty)
        #expect(state.openCount == 0)
    }

    @Test("nghttp2 refusing a stream fails the request; used-up stream ids also stop new requests")
    func openFailed() {
        var (state, ids) = Self.ready(limit: 1, requests: [1, 2, 3])
        var actions: [State.Action] = []
        let (first, _) = state.nextRequestToOpen()!
        state.openFailed(first, idsExhausted: false, reason: "no", actions: &actions)
        #expect(actions.map(Self.describe) == ["fail 1 protocol error safe"])
        #expect(state.openCount == 0)
        actions = []
        let (second, _) = state.nextRequestToOpen()!
        #expect(second == ids[1])
        state.openFailed(second, idsExhausted: true, reason: "ids", actions: &actions)
        #expect(
            actions.map(Self.describe) == [
                "fail 2 stream ids exhausted safe", "reject stream ids exhausted", "fail 3 stream ids exhausted safe",
            ]
        )
        #expect(state.phase == .goingAway)
        #expect(state.shouldClose(inboxIsEmpty: true))
    }

    // MARK: GOAWAY

    @Test("GOAWAY: waiting requests fail safe to retry, open ones above the last stream id too, the rest finish")
    func goAway() {
        var (state, ids) = Self.ready(limit: 3, requests: [1, 2, 3, 4])
        let result12 = Self.openAll(&state)
        #expect(result12 == [1, 2, 3])  // stream ids 1, 3, 5
        var actions: [State.Action] = []
        state.goAwayReceived(HTTP2GoAway(lastStreamID: 3, errorCode: .noError, debugData: []), actions: &actions)
        #expect(actions.map(Self.describe) == ["reject GOAWAY", "fail 4 GOAWAY safe"])
        #expect(state.phase == .goingAway)
        #expect(!state.status.isUsable)
        #expect(state.status.goAway?.lastStreamID == 3)
        let result13 = state.nextRequestToOpen()
        #expect(result13 == nil)
        #expect(!state.shouldClose(inboxIsEmpty: true))

        actions = []
        state.streamClosed(ids[0], errorCode: .noError, status: 200, actions: &actions)
        state.streamClosed(ids[1], errorCode: .noError, status: 200, actions: &actions)
        state.streamClosed(ids[2], errorCode: .refusedStream, status: 0, actions: &actions)
        #expect(actions.map(Self.describe) == ["succeed 1", "succeed 2", "fail 3 GOAWAY safe"])
        #expect(state.shouldClose(inboxIsEmpty: true))
        #expect(!state.shouldClose(inboxIsEmpty: false))

        actions = []
        _ = state.submit(5, at: 0, timeoutOverride: nil, cancelled: false, actions: &actions)
        #expect(actions.map(Self.describe) == ["fail 5 GOAWAY safe"])
    }

    @Test("HEADERS that could not be sent fail the request safe to retry (a GOAWAY's error once one came)")
    func headersNotSent() {
        var (state, ids) = Self.ready(requests: [1, 2])
        _ = Self.openAll(&state)  // stream ids 1 and 3
        var actions: [State.Action] = []
        state.headersNotSent(streamID: 3, reason: "closing", actions: &actions)
        #expect(actions.map(Self.describe) == ["fail 2 connection closed safe"])
        #expect(state.openCount == 1)
        state.goAwayReceived(HTTP2GoAway(lastStreamID: 0, errorCode: .noError, debugData: []), actions: &actions)
        actions = []
        state.headersNotSent(streamID: 1, reason: "goaway", actions: &actions)
        #expect(actions.map(Self.describe) == ["fail 1 GOAWAY safe"])
        #expect(!state.isReceiving(ids[0]))
        #expect(state.openCount == 0)
    }

    // MARK: timeouts

    struct TimeoutCase: Sendable, CustomTestStringConvertible {
        var defaultTimeout: UInt64?
        var override: UInt64?
        /// 0: queued, 1: open, 2: open with HEADERS sent.
        var progress: Int
        var now: UInt64
        var expected: [String]
        var testDescription: String {
            "default \(defaultTimeout.map(String.init) ?? "none"), own \(override.map(String.init) ?? "none"), "
                + "progress \(progress), at \(now): \(expected)"
        }
    }

    @Test(
        "a request times out at its own or the default deadline; safe to retry unless its HEADERS went out",
        arguments: [
            TimeoutCase(defaultTimeout: 100, override: nil, progress: 0, now: 99, expected: []),
            TimeoutCase(
                defaultTimeout: 100,
                override: nil,
                progress: 0,
                now: 100,
                expected: ["fail 1 request timeout safe"]
            ),
            TimeoutCase(
                defaultTimeout: 100,
                override: 50,
                progress: 0,
                now: 50,
                expected: ["fail 1 request timeout safe"]
            ),
            TimeoutCase(defaultTimeout: 100, override: 500, progress: 0, now: 499, expected: []),
            TimeoutCase(defaultTimeout: nil, override: nil, progress: 1, now: .max, expected: []),
            TimeoutCase(
                defaultTimeout: 100,
                override: nil,
                progress: 1,
                now: 100,
                expected: ["reset 1", "fail 1 request timeout safe"]
            ),
            TimeoutCase(
                defaultTimeout: 100,
                override: nil,
                progress: 2,
                now: 100,
                expected: ["reset 1", "fail 1 request timeout"]
            ),
            TimeoutCase(
                defaultTimeout: 100,
                override: 0,
                progress: 0,
                now: 0,
                expected: ["fail 1 request timeout safe"]
            ),
        ]
    )
    func timeouts(_ row: TimeoutCase) {
        var (state, _) = Self.ready(limit: row.progress == 0 ? 0 : 1, defaultTimeout: row.defaultTimeout)
        var actions: [State.Action] = []
        let id = state.submit(1, at: 0, timeoutOverride: row.override, cancelled: false, actions: &actions)
        if let id {
            if row.progress > 0 { _ = Self.openAll(&state) }
            if row.progress > 1 { state.headersSent(id) }
            let result14 = state.nextDeadline()
            #expect(result14 == (row.override ?? row.defaultTimeout))
            state.deadlinesPassed(now: row.now, actions: &actions)
        }
        #expect(actions.map(Self.describe) == row.expected)
        if !row.expected.isEmpty {
            #expect(state.queuedCount == 0)
            let result15 = state.nextDeadline()
            #expect(result15 == nil)
        }
    }

    @Test("deadlines of answered requests are forgotten, however many there were")
    func answeredDeadlines() {
        var (state, ids) = Self.ready(limit: 10_000, maximum: 10_000, defaultTimeout: 1_000, requests: Array(0..<5_000))
        let result16 = Self.openAll(&state)
        #expect(result16.count == 5_000)
        var actions: [State.Action] = []
        for id in ids.dropLast() { state.streamClosed(id, errorCode: .noError, status: 200, actions: &actions) }
        #expect(actions.count == 4_999)
        let result17 = state.nextDeadline()
        #expect(result17 == 1_000)
        actions = []
        state.deadlinesPassed(now: 1_000, actions: &actions)
        #expect(actions.map(Self.describe) == ["reset 9999", "fail 4999 request timeout safe"])
        let result18 = state.nextDeadline()
        #expect(result18 == nil)
    }

    // MARK: cancellation

    @Test("cancelling: before the loop saw it, while queued, while open; a late cancel does nothing")
    func cancellation() {
        var (state, ids) = Self.ready(limit: 1, defaultTimeout: 100, requests: [1, 2])
        var actions: [State.Action] = []
        #expect(state.submit(3, at: 0, timeoutOverride: nil, cancelled: true, actions: &actions) == nil)
        _ = Self.openAll(&state)
        state.cancel(ids[1], actions: &actions)
        state.cancel(ids[0], actions: &actions)
        #expect(actions.map(Self.describe) == ["fail 3 cancelled", "fail 2 cancelled", "reset 1", "fail 1 cancelled"])
        #expect(state.queuedCount == 0)
        #expect(state.openCount == 1)  // until nghttp2 closes the reset stream
        actions = []
        state.cancel(ids[0], actions: &actions)
        state.cancel(ids[1], actions: &actions)
        state.deadlinesPassed(now: 1_000, actions: &actions)
        state.streamClosed(ids[0], errorCode: .cancel, status: 0, actions: &actions)
        #expect(actions.isEmpty)
        #expect(state.openCount == 0)
        // A reused slot does not answer to the old id.
        let next = state.submit(4, at: 0, timeoutOverride: nil, cancelled: false, actions: &actions)!
        state.cancel(ids[1], actions: &actions)
        #expect(actions.isEmpty)
        state.cancel(next, actions: &actions)
        #expect(actions.map(Self.describe) == ["fail 4 cancelled"])
    }

    // MARK: closing and failure

    @Test("close: waits for queued and open requests, then closes; a failure fails them all, retiring open ones")
    func closing() {
        var (state, ids) = Self.ready(limit: 1, requests: [1, 2])
        _ = Self.openAll(&state)
        state.requestClose()
        #expect(!state.status.isUsable)
        #expect(!state.shouldClose(inboxIsEmpty: true))
        var actions: [State.Action] = []
        state.streamClosed(ids[0], errorCode: .noError, status: 200, actions: &actions)
        let result19 = Self.openAll(&state, firstStreamID: 3)
        #expect(result19 == [2])
        state.headersSent(ids[1])
        state.fail(HTTP2Error(code: .connectionClosed, isSafeToRetry: false, message: "gone"), actions: &actions)
        #expect(
            actions.map(Self.describe) == [
                "succeed 1", "close connection closed retired [2]", "fail 2 connection closed",
            ]
        )
        #expect(state.phase == .closed)
        #expect(state.status.isClosed)
        #expect(state.status.failure?.message == "gone")
        #expect(state.status.maxConcurrentStreams == 0)
        actions = []
        _ = state.submit(3, at: 0, timeoutOverride: nil, cancelled: false, actions: &actions)
        state.fail(HTTP2Error(code: .pingTimeout, isSafeToRetry: false, message: "again"), actions: &actions)
        #expect(actions.map(Self.describe) == ["fail 3 connection closed safe"])
    }

    struct FailureCase: Sendable, CustomTestStringConvertible {
        var closeRequested: Bool
        var goAway: Bool
        var code: HTTP2Error.Code
        var countsAsFailure: Bool
        var testDescription: String {
            "close asked \(closeRequested), GOAWAY \(goAway), \(code): failure \(countsAsFailure)"
        }
    }

    @Test(
        "only an end nobody asked for counts as a connection failure",
        arguments: [
            FailureCase(closeRequested: false, goAway: false, code: .connectionClosed, countsAsFailure: true),
            FailureCase(closeRequested: true, goAway: false, code: .connectionClosed, countsAsFailure: false),
            FailureCase(closeRequested: false, goAway: true, code: .connectionClosed, countsAsFailure: false),
            FailureCase(closeRequested: true, goAway: false, code: .pingTimeout, countsAsFailure: true),
        ]
    )
    func failureMetric(_ row: FailureCase) {
        var (state, _) = Self.ready()
        var actions: [State.Action] = []
        if row.closeRequested { state.requestClose() }
        if row.goAway {
            state.goAwayReceived(HTTP2GoAway(lastStreamID: 0, errorCode: .noError, debugData: []), actions: &actions)
        }
        actions = []
        state.fail(HTTP2Error(code: row.code, isSafeToRetry: false, message: "end"), actions: &actions)
        guard case .closeConnection(let closing) = actions.first else {
            Issue.record("no close action: \(actions.map(Self.describe))")
            return
        }
        #expect(closing.isFailure == row.countsAsFailure)
    }

    // MARK: PING

    @Test("PING: sent after an interval without reads, one at a time; unanswered it times out")
    func ping() {
        var (state, _) = Self.ready()
        let result20 = state.pingCheck(now: 500, lastRead: 0, interval: 1_000)
        #expect(result20 == .checkAgain(at: 1_000_500))
        let result21 = state.pingCheck(now: 5_000_000, lastRead: 4_900_000, interval: 3_000_000)
        #expect(result21 == .checkAgain(at: 7_900_000))
        let result22 = state.pingCheck(now: 1_000, lastRead: 0, interval: 1_000)
        #expect(result22 == .sendPing(nextCheck: 2_000))
        #expect(state.pingTimedOut())
        let result23 = state.pingCheck(now: 3_000, lastRead: 0, interval: 1_000)
        #expect(result23 == .checkAgain(at: 1_003_000))
        state.pingAcknowledged()
        #expect(!state.pingTimedOut())
        var closed = State(defaultTimeout: nil, maximumConcurrentStreams: 10)
        let result24 = closed.pingCheck(now: 1_000, lastRead: 0, interval: 1)
        #expect(result24 == .stop)
    }

    // MARK: flow control

    @Test("output is pulled from nghttp2 only below the high-water mark; the settings announce our windows")
    func flowControl() {
        #expect(State.mayPullOutput(pendingWriteBytes: 0))
        #expect(State.mayPullOutput(pendingWriteBytes: State.outputHighWater - 1))
        #expect(!State.mayPullOutput(pendingWriteBytes: State.outputHighWater))
        let local = State.localSettings(initialStreamWindowSize: 1 << 20, connectionWindowSize: 16 << 20)
        #expect(local.settings.map(\.id) == [2, 4, 3, 6])
        #expect(local.settings.map(\.value) == [0, 1 << 20, 0, 65_536])
        #expect(local.connectionWindow == 16 << 20)
        #expect(State.localSettings(initialStreamWindowSize: 1, connectionWindowSize: 65_535).connectionWindow == nil)
        #expect(
            State.localSettings(initialStreamWindowSize: 1 << 40, connectionWindowSize: 0).settings[1].value == .max
        )
    }

    // MARK: header limits

    struct HeaderFieldCase: Sendable, CustomTestStringConvertible {
        var name: Int
        var value: Int
        var size: Int
        var testDescription: String { "\(name)-byte name, \(value)-byte value: \(size)" }
    }

    @Test(
        "a header field counts as RFC 9113 §6.5.2 says: name and value octets plus 32",
        arguments: [
            HeaderFieldCase(name: 7, value: 3, size: 42),
            HeaderFieldCase(name: 1, value: 0, size: 33),
            HeaderFieldCase(name: 0, value: 0, size: 32),
            HeaderFieldCase(name: 10, value: 65_536, size: 65_578),
        ]
    )
    func headerFieldSize(_ row: HeaderFieldCase) {
        #expect(State.headerFieldSize(nameLength: row.name, valueLength: row.value) == row.size)
    }

    @Test("64 KiB of header list per stream; 2,048 empty fields already pass it (the 32 bytes each count)")
    func headerListLimit() {
        #expect(State.maximumHeaderListSize == 65_536)
        #expect(State.maximumContinuations == 8)
        let emptyFields = State.maximumHeaderListSize / State.headerFieldSize(nameLength: 1, valueLength: 0)
        #expect(emptyFields < 2_048)
    }

    struct ExcessCase: Sendable, CustomTestStringConvertible {
        var excess: State.HeaderListExcess
        var headersSent: [Bool]
        var queued: Int
        var expected: [String]
        var testDescription: String { "\(excess), headers sent \(headersSent), \(queued) queued" }
    }

    @Test(
        "a peer over a header limit is dropped: the connection closes (abort, a failure) and every request fails",
        arguments: [
            ExcessCase(
                excess: .bytes(limit: 65_536),
                headersSent: [true],
                queued: 0,
                expected: ["close header list too large failure retired [0]", "fail 0 header list too large"]
            ),
            ExcessCase(
                excess: .continuations(limit: 8),
                headersSent: [true, false],
                queued: 1,
                expected: [
                    "close header list too large failure retired [0, 1]", "fail 0 header list too large",
                    "fail 1 header list too large safe", "fail 2 header list too large safe",
                ]
            ),
        ]
    )
    func headerListTooLarge(_ row: ExcessCase) {
        let open = row.headersSent.count
        var (state, ids) = Self.ready(limit: open, requests: Array(0..<(open + row.queued)))
        _ = Self.openAll(&state)
        for (index, sent) in row.headersSent.enumerated() where sent { state.headersSent(ids[index]) }
        var actions: [State.Action] = []
        state.headerListTooLarge(row.excess, actions: &actions)
        #expect(actions.map(Self.describe) == row.expected)
        #expect(state.phase == .closed)
        #expect(state.failure?.code == .headerListTooLarge)
        #expect(state.failure?.message.contains(row.excess.description) == true)
        // Once closed, a second excess (nghttp2 stops anyway) changes nothing.
        var again: [State.Action] = []
        state.headerListTooLarge(row.excess, actions: &again)
        #expect(again.isEmpty)
    }
}
