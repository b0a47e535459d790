import HTTP2
import HeraldCore
import Synchronization
import Testing

@testable import APNs
@testable import APNsTransport

/// `ConnectionPoolState` without sockets: events in (connects, acquisitions, answers, failures,
/// time, shutdown), decisions and effects out.
@Suite struct ConnectionPoolStateTests {
    typealias State = ConnectionPoolState<FakeConnection>

    /// A connection whose stream limit and usability the test sets.
    final class FakeConnection: PooledConnection {
        private let current: Mutex<HTTP2ClientConnection.Status>

        init(streams: Int) {
            var status = HTTP2ClientConnection.Status()
            status.isUsable = true
            status.maxConcurrentStreams = streams
            current = Mutex(status)
        }

        var usableStreamLimit: Int? { current.withLock { $0.isUsable ? $0.maxConcurrentStreams : nil } }
        var status: HTTP2ClientConnection.Status { current.withLock { $0 } }

        func fail(_ message: String) {
            current.withLock {
                $0.isUsable = false
                $0.isClosed = true
                $0.failure = HTTP2Error(code: .connectionClosed, isSafeToRetry: true, message: message)
            }
        }
    }

    /// The state, its clock and its connections by the order they connected.
    /// The state's monotonic time, which only the test moves.
    final class TestTime: Sendable {
        let now = Mutex(Duration.zero)
    }

    struct Pool {
        let time = TestTime()
        var state: State
        var connections: [FakeConnection] = []
        let metrics = MetricsRegistry()

        init(maxConnections: Int = 1) {
            let time = self.time
            state = State(
                endpoint: APNSEndpoint(host: "apns.test", port: 443),
                maxConnections: maxConnections,
                backoff: APNSRetryPolicy(initialBackoff: .seconds(1), maxBackoff: .seconds(8)),
                random: SeededRandom(seed: 7),
                now: { time.now.withLock { $0 } },
                connections: metrics.gauge("herald_apns_connections", help: "test")
            )
        }

        mutating func acquire(mayConnect: Bool = true) -> (State.Acquisition, State.Effects) {
            var effects = State.Effects()
            let acquisition = state.acquire(mayConnect: mayConnect, effects: &effects)
            return (acquisition, effects)
        }

        /// Connects a new connection with `streams` streams through the state's own steps.
        @discardableResult
        mutating func connect(streams: Int = 10) -> FakeConnection {
            var effects = State.Effects()
            let attempt = ConnectAttempt()
            let connection = FakeConnection(streams: streams)
            // Only a started connect is recorded: start one the way a send would.
            if case .connect(let started) = state.acquire(mayConnect: true, effects: &effects) {
                _ = state.connectFinished(started, result: .success(connection), effects: &effects)
            } else {
                _ = state.connectFinished(attempt, result: .success(connection), effects: &effects)
            }
            connections.append(connection)
            return connection
        }

        mutating func failConnect() -> ConnectAttempt.Outcome {
            var effects = State.Effects()
            guard case .connect(let attempt) = state.acquire(mayConnect: true, effects: &effects) else {
                Issue.record("expected a connect")
                return .cancelled
            }
            let error = HTTP2Error(code: .connectFailed, isSafeToRetry: true, message: "cannot connect: refused")
            return state.connectFinished(attempt, result: .failure(error), effects: &effects)
        }

        /// Acquires and answers with `status` on whatever connection the state picks.
        mutating func answer(_ status: Int, body: [UInt8] = []) -> State.Effects {
            var effects = State.Effects()
            guard case .use(let id, _) = state.acquire(mayConnect: false, effects: &effects) else {
                Issue.record("expected a connection to use")
                return effects
            }
            state.release(id, outcome: .response(status: status, body: body), effects: &effects)
            return effects
        }

        func advance(by duration: Duration) {
            time.now.withLock { $0 += duration }
        }

        func id(of acquisition: State.Acquisition) -> ObjectIdentifier? {
            if case .use(_, let connection) = acquisition { return ObjectIdentifier(connection) }
            return nil
        }
    }

    /// What `acquire` decides, as a name the table can compare.
    enum Decision: Equatable, CustomStringConvertible {
        case use(connection: Int), connect, wait, fail(String)

        var description: String {
            switch self {
            case .use(let index): "use #\(index)"
            case .connect: "connect"
            case .wait: "wait"
            case .fail(let code): "fail \(code)"
            }
        }
    }

    static func decision(_ acquisition: State.Acquisition, in pool: Pool) -> Decision {
        switch acquisition {
        case .use(_, let connection):
            .use(connection: pool.connections.firstIndex { $0 === connection } ?? -1)
        case .connect: .connect
        case .wait: .wait
        case .fail(let error): .fail(error.code.description)
        }
    }

    /// One row: a pool built by `setUp`, then one acquisition.
    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let maxConnections: Int
        let mayConnect: Bool
        let setUp: @Sendable (inout Pool) -> Void
        let expected: Decision

        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "empty pool connects", maxConnections: 1, mayConnect: true, setUp: { _ in }, expected: .connect),
        Row(
            name: "empty pool that may not connect fails unreachable",
            maxConnections: 1,
            mayConnect: false,
            setUp: { _ in },
            expected: .fail("unreachable")
        ),
        Row(
            name: "a connect in progress is waited for",
            maxConnections: 1,
            mayConnect: true,
            setUp: { pool in _ = pool.acquire() },
            expected: .wait
        ),
        Row(
            name: "a connection with a free stream is used",
            maxConnections: 2,
            mayConnect: true,
            setUp: { pool in pool.connect(streams: 2) },
            expected: .use(connection: 0)
        ),
        Row(
            name: "an unanswered full connection takes the request rather than a second connect",
            maxConnections: 2,
            mayConnect: true,
            setUp: { pool in
                pool.connect(streams: 1)
                _ = pool.acquire()
            },
            expected: .use(connection: 0)
        ),
        Row(
            name: "an answered full connection makes room for a second one",
            maxConnections: 2,
            mayConnect: true,
            setUp: { pool in
                pool.connect(streams: 1)
                _ = pool.answer(200)
                _ = pool.acquire()
            },
            expected: .connect
        ),
        Row(
            name: "at maxConnections the least loaded full connection queues the request",
            maxConnections: 1,
            mayConnect: true,
            setUp: { pool in
                pool.connect(streams: 1)
                _ = pool.answer(200)
                _ = pool.acquire()
            },
            expected: .use(connection: 0)
        ),
        Row(
            name: "the least loaded of two connections",
            maxConnections: 2,
            mayConnect: true,
            setUp: { pool in
                pool.connect(streams: 10)
                _ = pool.answer(200)
                _ = pool.acquire()
                _ = pool.acquire()
                pool.connect(streams: 10)
                // The second connection's warm-up answer came, the first still carries two.
                _ = pool.acquire()
            },
            expected: .use(connection: 1)
        ),
        Row(
            name: "backing off after a failed connect fails unreachable",
            maxConnections: 1,
            mayConnect: true,
            setUp: { pool in _ = pool.failConnect() },
            expected: .fail("unreachable")
        ),
        Row(
            name: "shutting down fails shut_down",
            maxConnections: 1,
            mayConnect: true,
            setUp: { pool in _ = pool.state.beginShutdown() },
            expected: .fail("shut_down")
        ),
        Row(
            name: "a lost connection is replaced",
            maxConnections: 1,
            mayConnect: true,
            setUp: { pool in
                pool.connect()
                _ = pool.answer(200)
                pool.connections[0].fail("connection reset")
            },
            expected: .connect
        ),
    ]

    @Test(arguments: rows)
    func acquisition(_ row: Row) {
        var pool = Pool(maxConnections: row.maxConnections)
        row.setUp(&pool)
        let (acquisition, _) = pool.acquire(mayConnect: row.mayConnect)
        #expect(Self.decision(acquisition, in: pool) == row.expected, "\(row.name)")
    }

    @Test func aFailedConnectBacksOffThenTheNextSendConnectsAgain() {
        var pool = Pool()
        guard case .failed(let error) = pool.failConnect() else {
            Issue.record("expected the connect to fail")
            return
        }
        #expect(error.code == .unreachable)
        #expect(!pool.state.isAvailable())
        let status = pool.state.status()
        #expect(status.consecutiveConnectFailures == 1)
        #expect(status.lastConnectError == "cannot connect: refused")
        let wait = status.nextConnectAttemptIn ?? .zero
        #expect(wait > .zero && wait <= .seconds(1))

        pool.advance(by: wait)
        #expect(pool.state.isAvailable())
        #expect(Self.decision(pool.acquire().0, in: pool) == .connect)
    }

    @Test func aResponseEndsTheBackoffAndClearsTheLastError() {
        var pool = Pool()
        _ = pool.failConnect()
        pool.advance(by: .seconds(1))
        pool.connect()
        #expect(pool.state.status().consecutiveConnectFailures == 1)
        _ = pool.answer(200)
        let status = pool.state.status()
        #expect(status.consecutiveConnectFailures == 0)
        #expect(status.lastConnectError == nil)
        #expect(status.nextConnectAttemptIn == nil)
    }

    @Test func a503RetiresTheConnectionWhichIsClosedOnceIdleAndReplaced() {
        var pool = Pool()
        let first = pool.connect()
        let effects = pool.answer(503, body: Array(#"{"reason":"ServiceUnavailable"}"#.utf8))
        #expect(effects.close.map(ObjectIdentifier.init) == [ObjectIdentifier(first)])
        #expect(
            effects.events.contains {
                if case .retired(_, let reason, let served) = $0 {
                    return reason == "HTTP 503 (ServiceUnavailable)" && served == 1
                }
                return false
            }
        )
        #expect(pool.state.status().openConnections == 0)
        #expect(Self.decision(pool.acquire().0, in: pool) == .connect)
    }

    @Test func aConnectionLostBeforeAnyResponseCountsAsAFailedConnect() {
        var pool = Pool()
        let connection = pool.connect()
        var effects = State.Effects()
        guard case .use(let id, _) = pool.state.acquire(mayConnect: true, effects: &effects) else {
            Issue.record("expected a connection to use")
            return
        }
        connection.fail("GOAWAY BadCertificateEnvironment")
        let error = HTTP2Error(
            code: .connectionClosed,
            isSafeToRetry: false,
            message: "GOAWAY BadCertificateEnvironment"
        )
        pool.state.release(id, outcome: .failure(error, final: true), effects: &effects)
        #expect(effects.close.count == 1)
        #expect(effects.statusCounts == [-1: 1])
        #expect(pool.state.status().consecutiveConnectFailures == 1)
        #expect(!pool.state.isAvailable())
    }

    @Test func aStreamResetLeavesTheConnectionInUse() {
        var pool = Pool()
        pool.connect()
        _ = pool.answer(200)
        var effects = State.Effects()
        guard case .use(let id, _) = pool.state.acquire(mayConnect: true, effects: &effects) else {
            Issue.record("expected a connection to use")
            return
        }
        let error = HTTP2Error(code: .streamReset, isSafeToRetry: false, message: "stream reset")
        pool.state.release(id, outcome: .failure(error, final: true), effects: &effects)
        #expect(effects.close.isEmpty)
        #expect(pool.state.status().usableConnections == 1)
    }

    @Test func responseCountsReachTheMetricsWhenThePoolGoesIdle() {
        var pool = Pool()
        pool.connect()
        var effects = State.Effects()
        var ids: [Int] = []
        for _ in 0..<3 {
            if case .use(let id, _) = pool.state.acquire(mayConnect: true, effects: &effects) { ids.append(id) }
        }
        pool.state.release(ids[0], outcome: .response(status: 200, body: []), effects: &effects)
        pool.state.release(ids[1], outcome: .response(status: 410, body: []), effects: &effects)
        #expect(effects.statusCounts.isEmpty, "two of three answered: the pool is not idle yet")
        pool.state.release(ids[2], outcome: .response(status: 200, body: []), effects: &effects)
        #expect(effects.statusCounts == [200: 2, 410: 1])
    }

    @Test func shutdownRefusesNewCallsAndHandsOverEveryConnectionIncludingDeferredCloses() {
        var pool = Pool(maxConnections: 2)
        let first = pool.connect()
        _ = pool.answer(200)
        let retired = FakeConnection(streams: 1)
        pool.state.deferClose([retired])
        #expect(pool.state.hasDeferredCloses)

        let entered = pool.state.enter()
        #expect(entered)
        let mustWait = pool.state.beginShutdown()
        #expect(mustWait, "a call is still inside")
        let enteredAfterShutdown = pool.state.enter()
        #expect(!enteredAfterShutdown)
        let waiters = pool.state.leave()
        #expect(waiters.isEmpty, "no drain waiter was added")
        let mustStillWait = pool.state.beginShutdown()
        #expect(!mustStillWait)

        let closing = pool.state.finishShutdown().map(ObjectIdentifier.init)
        #expect(Set(closing) == [ObjectIdentifier(first), ObjectIdentifier(retired)])
        #expect(!pool.state.hasDeferredCloses)
        #expect(pool.state.status().isShutDown)
        #expect(pool.state.status().openConnections == 0)
    }

    @Test func warmUpConnectsUntilTheTargetIsUsable() {
        var pool = Pool(maxConnections: 3)
        var effects = State.Effects()
        guard case .connect = pool.state.warmUpStep(target: 2, effects: &effects) else {
            Issue.record("expected a connect")
            return
        }
        pool = Pool(maxConnections: 3)
        pool.connect()
        pool.connect()
        let step = pool.state.warmUpStep(target: 2, effects: &effects)
        #expect(step == nil)
        pool.connections[1].fail("closed")
        guard case .connect = pool.state.warmUpStep(target: 2, effects: &effects) else {
            Issue.record("expected a connect to replace the lost connection")
            return
        }
    }
}
