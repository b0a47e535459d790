import APNs
import APNsTransport
import Foundation
import HTTP2
import HeraldCore
import Synchronization
import Testing

/// A real client over a real pool to a ``TestAPNsServer``.
struct EndToEndHarness {
    let server: TestAPNsServer
    let pool: APNSConnectionPool
    let client: APNSClient
    let tokens: APNSTokenManager
    let clock: ManualClock
    let metrics: MetricsRegistry
    let logs: LogCapture

    /// Requests sent to the server for `apnsID` (retries included).
    func requests(for apnsID: UUID) -> [TestAPNsServer.Received] {
        server.received.filter { $0.apnsID == apnsID.uuidString.lowercased() }
    }

    func metric(_ name: String, _ labels: MetricLabels = []) -> Int {
        Int(metrics.value(name, labels: labels) ?? 0)
    }
}

/// Starts `server`, builds a token client over a pool to it (tokens and retry waits on one manual
/// clock whose wall clock starts now), runs `body`, then shuts the pool down and stops the server.
///
/// The client does not retry unless `retryPolicy` says so, so that what the pool does on its own
/// (resending unprocessed requests, replacing connections) is what a test sees.
func withHarness<T: Sendable>(
    server: TestAPNsServer? = nil,
    pool configure: (inout APNSConnectionPool.Configuration) -> Void = { _ in },
    retryPolicy: APNSRetryPolicy = .never,
    clock: ManualClock = ManualClock(Date()),
    poolClock: ManualClock? = nil,
    _ body: (EndToEndHarness) async throws -> T
) async throws -> T {
    let server = try server ?? TestAPNsServer(fake: try TestAPNsServer.makeFake())
    try server.start()
    let metrics = MetricsRegistry()
    let logs = LogCapture()
    let key = try Fixtures.signingKey()
    var configuration = APNSConnectionPool.Configuration()
    configuration.pingInterval = nil
    configuration.reconnectBackoff = (.milliseconds(10), .milliseconds(100))
    configure(&configuration)
    let pool = APNSConnectionPool(
        endpoint: server.endpoint,
        tls: APNSTLSConfiguration(caFile: server.caFile, credentials: .token(key)),
        configuration: configuration,
        logger: logs.logger,
        metrics: metrics,
        clock: poolClock ?? ManualClock(),
        random: MaximumRandom()
    )
    let tokens = APNSTokenManager(signingKey: key, clock: clock)
    let client = APNSClient(
        transport: pool,
        credentials: .token(key),
        tokenProvider: tokens,
        retryPolicy: retryPolicy,
        clock: clock,
        random: SeededRandom(seed: 42),
        logger: logs.logger
    )
    let harness = EndToEndHarness(
        server: server,
        pool: pool,
        client: client,
        tokens: tokens,
        clock: clock,
        metrics: metrics,
        logs: logs
    )
    // An interceptor usually captures the harness, which holds the server: dropping it breaks
    // that cycle, which LeakSanitizer would otherwise report at exit.
    do {
        let result = try await body(harness)
        await pool.shutdown()
        await server.stop()
        server.intercept(nil)
        logs.expectNoSecrets()
        return result
    } catch {
        await pool.shutdown()
        await server.stop()
        server.intercept(nil)
        throw error
    }
}

/// Starts `server`, runs `body`, stops the server (also when `body` throws).
func running<T: Sendable>(_ server: TestAPNsServer, _ body: () async throws -> T) async throws -> T {
    try server.start()
    do {
        let result = try await body()
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

/// Log lines, kept for assertions; ``expectNoSecrets()`` checks that no provider token or key
/// material was logged.
final class LogCapture: LogHandler {
    private let records = Mutex<[String]>([])

    var logger: Logger { Logger(label: "herald.apns.test", level: .debug, handler: self) }

    var lines: [String] { records.withLock { $0 } }

    /// `HERALD_TEST_LOG=1` also prints every line, for debugging a test.
    private static let echo = ProcessInfo.processInfo.environment["HERALD_TEST_LOG"] == "1"

    func log(_ record: LogRecord) {
        let line = StreamLogHandler.render(record, format: .text)
        records.withLock { $0.append(line) }
        if Self.echo { print(line) }
    }

    func expectNoSecrets(sourceLocation: SourceLocation = #_sourceLocation) {
        for line in lines {
            #expect(
                !line.lowercased().contains("bearer"),
                "a log line contains a token: \(line)",
                sourceLocation: sourceLocation
            )
            #expect(!line.contains("eyJ"), "a log line contains a JWT: \(line)", sourceLocation: sourceLocation)
            #expect(!line.contains("PRIVATE KEY"), "a log line contains a key: \(line)", sourceLocation: sourceLocation)
        }
    }
}

/// Always the largest value: full-jitter backoffs come out at their ceiling, so tests know them.
struct MaximumRandom: RandomNumberGenerator, Sendable {
    mutating func next() -> UInt64 { .max }
}

/// Lets `count` arrivals through together: each ``arrive()`` waits until `count` have arrived
/// (or `liveness` passes, so that a broken client fails its assertions instead of hanging).
final class Barrier: Sendable {
    private struct State {
        var arrived = 0
        var open = false
        var openedByTimeout = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let count: Int
    private let liveness: Duration
    private let state = Mutex(State())
    private let onOpen: @Sendable () -> Void

    init(count: Int, liveness: Duration = .seconds(10), onOpen: @escaping @Sendable () -> Void = {}) {
        self.count = count
        self.liveness = liveness
        self.onOpen = onOpen
    }

    var isOpen: Bool { state.withLock { $0.open } }
    /// True when the liveness bound opened the barrier rather than the arrivals.
    var openedByTimeout: Bool { state.withLock { $0.openedByTimeout } }

    func arrive() async {
        let opened = state.withLock { state -> [CheckedContinuation<Void, Never>]? in
            state.arrived += 1
            guard !state.open, state.arrived >= count else { return nil }
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        if let opened {
            onOpen()
            opened.forEach { $0.resume() }
            return
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let open = state.withLock { state -> Bool in
                        if state.open { return true }
                        state.waiters.append(continuation)
                        return false
                    }
                    if open { continuation.resume() }
                }
            }
            group.addTask { [self] in
                // Opens on the liveness bound, and also when cancelled (the server is stopping), so
                // that the waiting child always finishes.
                let slept = (try? await Task.sleep(for: liveness)) != nil
                openNow(byTimeout: slept)
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// Opens the barrier whoever has arrived.
    func openNow(byTimeout: Bool = false) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>]? in
            guard !state.open else { return nil }
            state.open = true
            state.openedByTimeout = byTimeout
            defer { state.waiters = [] }
            return state.waiters
        }
        guard let waiters else { return }
        onOpen()
        waiters.forEach { $0.resume() }
    }
}

/// Runs `body` in a task while stepping `clock` past each of `sleeps` retry waits.
func stepping<T: Sendable>(
    _ clock: ManualClock,
    sleeps: Int,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let task = Task { try await body() }
    for _ in 0..<sleeps {
        try await clock.advanceToNextDeadline()
    }
    return try await task.value
}

/// Sends `requests` concurrently and returns the results in the same order.
func sendAll(_ client: APNSClient, _ requests: [APNSRequest]) async throws -> [APNSSendResult] {
    try await withThrowingTaskGroup(of: (Int, APNSSendResult).self) { group in
        for (index, request) in requests.enumerated() {
            group.addTask { (index, try await client.send(request)) }
        }
        var results = [APNSSendResult?](repeating: nil, count: requests.count)
        for try await (index, result) in group { results[index] = result }
        return results.map { $0! }
    }
}

/// A device token made from `seed`: 64 lowercase hexadecimal characters.
func deviceToken(_ seed: Int) -> String {
    String(format: "%064x", seed)
}

extension APNSRequest {
    /// An alert to `token` with a small payload.
    static func alert(token: String = Fixtures.token, id: UUID = UUID()) -> APNSRequest {
        APNSRequest(
            deviceToken: token,
            pushType: .alert,
            topic: .bundleID(Fixtures.bundleID),
            payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8),
            id: id
        )
    }
}

extension HTTP2ServerResponse {
    /// An APNs refusal: `{"reason": …}` and the `apns-id`.
    static func apnsError(_ status: Int, _ reason: String, apnsID: String?) -> HTTP2ServerResponse {
        var headers = HTTP2Headers()
        if let apnsID { headers.add(name: "apns-id", value: apnsID) }
        return HTTP2ServerResponse(status: status, headers: headers, body: Array(#"{"reason":"\#(reason)"}"#.utf8))
    }
}
