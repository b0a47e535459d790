import APNs
import APNsTransport
import AsyncTestSupport
import Foundation
import HTTP2
import HeraldCore
import Synchronization
import Testing

/// The pool against APNs' connection behaviour: the stream limit that rises after the first
/// success, GOAWAY mid-flight, a server that dies and comes back, several connections, pings,
/// shutdown.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ConnectionEndToEndTests {
    @Test("one stream until the first success, then many: ≥ 50 at once of 500 sends on one connection")
    func streamLimit() async throws {
        // The first request is held until the other 499 are queued (up to 60 s below): its own
        // timeout must outlast that wait (one loaded run timed it out at the default 30 s).
        try await withHarness(pool: { $0.requestTimeout = .seconds(120) }) { h in
            let barrier = Barrier(count: 50)
            h.server.intercept { received in
                if h.server.answers.isEmpty {
                    // Hold the only stream until every request is on the connection, so that the
                    // client would open more streams now if it disregarded the server's limit. The
                    // pool announces no such moment: poll its count.
                    // Generous: under the full suite the 500 senders share two cooperative threads
                    // with every other test (one run took more than 10 s to get them all there).
                    try? await eventually("all 500 requests on the connection", timeout: .seconds(60)) {
                        h.pool.status.requestsInFlight == 500
                    }
                } else {
                    await barrier.arrive()
                }
                return .proceed
            }
            let requests = (0..<500).map { APNSRequest.alert(token: deviceToken($0)) }
            let results = try await sendAll(h.client, requests)
            #expect(results.allSatisfy { $0.isDelivered })
            #expect(h.server.requestCount == 500)
            #expect(h.server.connectionIDs.count == 1)
            #expect(h.server.peakConcurrencyBeforeRaise == 1, "more than one stream before the first success")
            #expect(h.server.peakConcurrency >= 50, "the client did not use the raised limit")
            #expect(barrier.isOpen)
            #expect(h.metric("herald_apns_requests_total", [("status", "200")]) == 500)
            #expect(h.metric("herald_apns_connects_total", [("result", "connected")]) == 1)
            #expect(h.metric("herald_apns_connections", [("endpoint", h.server.endpoint.description)]) == 1)
        }
    }

    @Test("GOAWAY mid-flight: unprocessed streams go to a new connection; each request answered exactly once")
    func goAwayMidFlight() async throws {
        try await withHarness { h in
            let held = Mutex<[(streamID: Int, connection: HTTP2ServerConnection)]>([])
            let lastStreamID = Mutex<Int?>(nil)
            let firstConnection = Mutex<Int?>(nil)
            let barrier = Barrier(count: 100) {
                // With 100 requests held: GOAWAY with a last-stream-id in the middle of them, and
                // APNs' JSON reason.
                let streams = held.withLock { $0.sorted { $0.streamID < $1.streamID } }
                let last = streams[streams.count / 2]
                lastStreamID.withLock { $0 = last.streamID }
                last.connection.goAway(lastStreamID: last.streamID, debugData: #"{"reason":"Shutdown"}"#)
            }
            h.server.intercept { received in
                let first = firstConnection.withLock { value -> Int in
                    if value == nil { value = received.connectionID }
                    return value!
                }
                // The first request on the first connection raises its limit; hold the next ones.
                guard received.connectionID == first, !h.server.answers.isEmpty else { return .proceed }
                if lastStreamID.withLock({ $0 }) == nil {
                    held.withLock { $0.append((received.streamID, received.connection)) }
                    await barrier.arrive()
                }
                let last = lastStreamID.withLock { $0 } ?? 0
                return received.streamID > last ? .unprocessed : .proceed
            }
            let requests = (0..<300).map { APNSRequest.alert(token: deviceToken($0)) }
            let results = try await sendAll(h.client, requests)

            #expect(results.allSatisfy { $0.isDelivered })
            for (request, result) in zip(requests, results) {
                if case .delivered(let delivery) = result {
                    #expect(delivery.apnsID == request.id)
                    #expect(delivery.attempts == 1)
                }
            }
            let last = try #require(lastStreamID.withLock { $0 })
            let answers = h.server.answers
            let counts = Dictionary(grouping: answers.compactMap(\.apnsID), by: { $0 }).mapValues(\.count)
            #expect(counts.count == 300, "every request answered")
            #expect(counts.values.allSatisfy { $0 == 1 }, "a request was answered twice")
            #expect(Set(requests.map { $0.id.uuidString.lowercased() }) == Set(counts.keys))
            let first = try #require(firstConnection.withLock { $0 })
            #expect(answers.filter { $0.connectionID == first }.allSatisfy { $0.streamID <= last })
            let retried = answers.filter { $0.connectionID != first }
            #expect(!retried.isEmpty, "no request was resent on a new connection")
            #expect(h.server.connectionIDs.count == 2)
            #expect(!barrier.openedByTimeout)
            #expect(h.metric("herald_apns_connects_total", [("result", "connected")]) == 2)
            #expect(h.logs.lines.contains { $0.contains("apns connection closing") && $0.contains("GOAWAY Shutdown") })
        }
    }

    @Test("server killed and restarted on the same port: fail fast with backoff, then reconnect in the same pool")
    func serverRestart() async throws {
        let poolClock = ManualClock()
        try await withHarness(
            pool: { $0.reconnectBackoff = (.seconds(1), .seconds(8)) },
            poolClock: poolClock
        ) { h in
            #expect(try await h.client.send(.alert()).isDelivered)
            #expect(h.pool.isAvailable)

            await h.server.stop()
            try await eventually("the pool to notice the close") { h.pool.status.usableConnections == 0 }

            func expectUnreachable(retryAfter: Duration, sourceLocation: SourceLocation = #_sourceLocation) async {
                do {
                    let result = try await h.client.send(.alert())
                    Issue.record("expected the pool error, got \(result)", sourceLocation: sourceLocation)
                } catch let error as APNSConnectionPoolError {
                    #expect(error.code == .unreachable, sourceLocation: sourceLocation)
                    #expect(error.isSafeToRetry, sourceLocation: sourceLocation)
                    #expect(APNSRetryPolicy.isSafeToRetry(error), sourceLocation: sourceLocation)
                    #expect(error.retryAfter == retryAfter, sourceLocation: sourceLocation)
                    #expect(error.description.hasPrefix("APNs unreachable: cannot connect to 127.0.0.1:"))
                    #expect(error.description.hasSuffix("; retrying in \(Self.seconds(retryAfter))s"))
                    #expect((error.underlying as? HTTP2Error)?.code == .connectFailed, sourceLocation: sourceLocation)
                } catch {
                    Issue.record("expected the pool error, got \(error)", sourceLocation: sourceLocation)
                }
            }
            // The first send after the outage tries to connect (refused) and starts the backoff.
            await expectUnreachable(retryAfter: .seconds(1))
            #expect(h.metric("herald_apns_connects_total", [("result", "failed")]) == 1)
            #expect(!h.pool.isAvailable)
            // During the backoff sends fail at once, without another connect.
            await expectUnreachable(retryAfter: .seconds(1))
            poolClock.advance(by: .milliseconds(400))
            await expectUnreachable(retryAfter: .milliseconds(600))
            #expect(h.metric("herald_apns_connects_total", [("result", "failed")]) == 1)

            // After the backoff the next send tries again; the wait doubles.
            poolClock.advance(by: .milliseconds(600))
            #expect(h.pool.isAvailable)
            await expectUnreachable(retryAfter: .seconds(2))
            #expect(h.metric("herald_apns_connects_total", [("result", "failed")]) == 2)
            #expect(h.pool.status.consecutiveConnectFailures == 2)
            #expect(h.pool.status.nextConnectAttemptIn == .seconds(2))

            try h.server.restart()
            await expectUnreachable(retryAfter: .seconds(2))
            #expect(h.metric("herald_apns_connects_total", [("result", "failed")]) == 2)

            poolClock.advance(by: .seconds(2))
            #expect(try await h.client.send(.alert()).isDelivered)
            #expect(h.pool.isAvailable)
            #expect(h.pool.status.consecutiveConnectFailures == 0)
            #expect(h.pool.status.lastConnectError == nil)
            #expect(h.metric("herald_apns_connects_total", [("result", "connected")]) == 2)
            #expect(h.logs.lines.contains { $0.contains("apns connect failed") })
        }
    }

    @Test("APNs closing connections before any response (GOAWAY BadCertificateEnvironment) causes backoff")
    func goAwayBeforeAnyResponse() async throws {
        let poolClock = ManualClock()
        try await withHarness(pool: { $0.reconnectBackoff = (.seconds(1), .seconds(8)) }, poolClock: poolClock) { h in
            h.server.intercept { received in
                // What APNs does with a certificate for the wrong environment: GOAWAY, then close.
                received.connection.goAway(
                    lastStreamID: 0,
                    debugData: #"{"reason":"BadCertificateEnvironment"}"#,
                    closeImmediately: true
                )
                return .unprocessed
            }
            func expectRefused(retryAfter: Duration, sourceLocation: SourceLocation = #_sourceLocation) async {
                do {
                    let result = try await h.client.send(.alert())
                    Issue.record("expected the pool error, got \(result)", sourceLocation: sourceLocation)
                } catch let error as APNSConnectionPoolError {
                    #expect(error.code == .unreachable, sourceLocation: sourceLocation)
                    #expect(error.reason.hasSuffix("closed before any response: GOAWAY BadCertificateEnvironment"))
                    #expect(error.retryAfter == retryAfter, sourceLocation: sourceLocation)
                } catch {
                    Issue.record("expected the pool error, got \(error)", sourceLocation: sourceLocation)
                }
            }
            await expectRefused(retryAfter: .seconds(1))
            #expect(h.metric("herald_apns_connects_total", [("result", "connected")]) == 1)
            await expectRefused(retryAfter: .seconds(1))
            #expect(
                h.metric("herald_apns_connects_total", [("result", "connected")]) == 1,
                "reconnected during backoff"
            )
            #expect(!h.pool.isAvailable)
            poolClock.advance(by: .seconds(1))
            await expectRefused(retryAfter: .seconds(2))
            #expect(h.metric("herald_apns_connects_total", [("result", "connected")]) == 2)
            #expect(h.server.requestCount == 2)
            #expect(
                h.logs.lines.contains {
                    $0.contains("apns connection closing") && $0.contains("BadCertificateEnvironment")
                }
            )
        }
    }

    @Test("more connections open only when every connection's streams are in use")
    func opensMoreConnectionsWhenSaturated() async throws {
        let server = try TestAPNsServer(fake: try TestAPNsServer.makeFake(), raisedStreamLimit: 10)
        try await withHarness(server: server, pool: { $0.maxConnections = 3 }) { h in
            // A burst on a fresh pool: the first connection allows one stream until its first
            // success, which is no reason to open more; then its limit rises to 10.
            let warm = try await sendAll(h.client, (0..<10).map { .alert(token: deviceToken($0)) })
            #expect(warm.allSatisfy { $0.isDelivered })
            #expect(h.server.connectionIDs.count == 1, "connections opened while the first was warming up")
            #expect(h.server.peakConcurrencyBeforeRaise == 1)
            // 15 at once: 10 streams on the first connection, the 11th opens a second connection
            // (one stream until its first success), the other 4 wait for streams on the first.
            let barrier = Barrier(count: 11)
            h.server.intercept { _ in
                await barrier.arrive()
                return .proceed
            }
            let results = try await sendAll(h.client, (0..<15).map { .alert(token: deviceToken($0)) })
            #expect(results.allSatisfy { $0.isDelivered })
            #expect(!barrier.openedByTimeout, "requests were not spread as expected")
            #expect(h.server.connectionIDs.count == 2)
            #expect(h.server.peakConcurrencyByConnection.values.allSatisfy { $0 <= 10 })

            // 40 at once: 10 + 10 streams, the 21st opens the third connection, the rest wait for
            // streams; never a fourth connection.
            let many = Barrier(count: 21)
            h.server.intercept { _ in
                await many.arrive()
                return .proceed
            }
            let more = try await sendAll(h.client, (0..<40).map { .alert(token: deviceToken($0)) })
            #expect(more.allSatisfy { $0.isDelivered })
            #expect(!many.openedByTimeout, "requests were not spread as expected")
            #expect(h.server.connectionIDs.count == 3)

            // 45 at once with three warm connections: 30 streams, 15 wait; maxConnections holds.
            let full = Barrier(count: 30)
            h.server.intercept { _ in
                await full.arrive()
                return .proceed
            }
            let most = try await sendAll(h.client, (0..<45).map { .alert(token: deviceToken($0)) })
            #expect(most.allSatisfy { $0.isDelivered })
            #expect(!full.openedByTimeout)
            #expect(h.server.connectionIDs.count == 3)
            #expect(h.pool.status.openConnections == 3)
            #expect(h.server.peakConcurrencyByConnection.values.allSatisfy { $0 <= 10 })
            #expect(h.metric("herald_apns_connections", [("endpoint", h.server.endpoint.description)]) == 3)
        }
    }

    @Test("warmUp opens minConnections; idle connections are kept alive with PING")
    func warmUpAndPing() async throws {
        try await withHarness(
            pool: {
                $0.minConnections = 2
                $0.maxConnections = 2
                $0.pingInterval = .milliseconds(100)
            }
        ) { h in
            try await h.pool.warmUp()
            #expect(h.pool.status.openConnections == 2)
            #expect(h.pool.status.usableConnections == 2)
            #expect(h.metric("herald_apns_connects_total", [("result", "connected")]) == 2)
            try await h.pool.warmUp()
            #expect(h.metric("herald_apns_connects_total", [("result", "connected")]) == 2, "warmUp is idempotent")
            #expect(try await h.client.send(.alert()).isDelivered)
            let connection = try #require(h.server.received.first?.connection)
            try await eventually("a keep-alive PING") { connection.pingsReceived >= 2 }
            #expect(h.pool.status.usableConnections == 2)
        }
    }

    @Test("shutdown lets in-flight requests finish, then refuses new ones and closes the connections")
    func gracefulShutdown() async throws {
        try await withHarness { h in
            #expect(try await h.client.send(.alert()).isDelivered)
            let barrier = Barrier(count: 20)
            h.server.intercept { _ in
                await barrier.arrive()
                return .proceed
            }
            let sends = Task { try await sendAll(h.client, (0..<20).map { .alert(token: deviceToken($0)) }) }
            try await eventually { h.server.inFlight == 20 || barrier.isOpen }
            await h.pool.shutdown()
            let results = try await sends.value
            #expect(results.allSatisfy { $0.isDelivered })
            #expect(h.pool.status.isShutDown)
            #expect(h.pool.status.openConnections == 0)
            do {
                _ = try await h.client.send(.alert())
                Issue.record("a send after shutdown succeeded")
            } catch let error as APNSConnectionPoolError {
                #expect(error.code == .shutDown)
            }
            #expect(h.metric("herald_apns_connections", [("endpoint", h.server.endpoint.description)]) == 0)
        }
    }

    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.1f", Double(seconds) + Double(attoseconds) / 1e18)
    }
}
