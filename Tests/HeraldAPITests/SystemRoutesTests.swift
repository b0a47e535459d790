import Foundation
import HTTPRouting
import HTTPServer
import HeraldAPI
import HeraldCore
import Storage
import Synchronization
import Testing

@Suite struct SystemRoutesTests {
    struct FailingCheck: ReadinessCheck {
        let name = "apns"
        func check() async throws { throw CheckFailure() }
    }

    struct CheckFailure: Error, CustomStringConvertible {
        var description: String { "connection refused" }
    }

    /// A check that takes a minute (a sleep on purpose), far beyond the readiness timeout.
    struct HangingCheck: ReadinessCheck {
        let name = "slow"
        func check() async throws { try await Task.sleep(for: .seconds(60)) }
    }

    /// Waits, deaf to cancellation, until the test lets it go (as a call stuck in a C driver does).
    final class Gate: Sendable {
        private let waiting = Mutex<[CheckedContinuation<Void, Never>]>([])
        private let opened = Mutex(false)

        func wait() async {
            await withCheckedContinuation { continuation in
                let wait = opened.withLock { opened in
                    if !opened { waiting.withLock { $0.append(continuation) } }
                    return !opened
                }
                if !wait { continuation.resume() }
            }
        }

        func open() {
            let waiters = opened.withLock { opened in
                opened = true
                return waiting.withLock { waiting in
                    defer { waiting = [] }
                    return waiting
                }
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    struct StuckCheck: ReadinessCheck {
        let name = "stuck"
        let gate: Gate
        func check() async throws { await gate.wait() }
    }

    func router(checks: [any ReadinessCheck], metrics: MetricsRegistry = MetricsRegistry()) -> Router {
        var router = Router()
        SystemRoutes(checks: checks, metrics: metrics, checkTimeout: .milliseconds(200)).register(on: &router)
        return router
    }

    func json(_ response: HTTPResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    @Test func rootAndHealthz() async throws {
        let router = router(checks: [])
        let root = try await router.respond(to: HTTPRequest(method: "GET", path: "/"))
        #expect(root.status == 200)
        #expect(root.body.isEmpty)
        let head = try await router.respond(to: HTTPRequest(method: "HEAD", path: "/"))
        #expect(head.status == 200)
        let health = try await router.respond(to: HTTPRequest(method: "GET", path: "/healthz"))
        #expect(health.status == 200)
        #expect(try json(health)["status"] as? String == "ok")
    }

    @Test func readyWhenTheDatabaseAnswers() async throws {
        let database = try await DatabaseFactory.open(url: "sqlite::memory:", logger: Logger(label: "test"))
        let response = try await router(checks: [DatabaseReadiness(database: database)])
            .respond(to: HTTPRequest(method: "GET", path: "/readyz"))
        await database.close()
        #expect(response.status == 200)
        let body = try json(response)
        #expect(body["status"] as? String == "ok")
        let checks = try #require(body["checks"] as? [String: [String: Any]])
        #expect(checks["database"]?["status"] as? String == "ok")
    }

    @Test func notReadyWhenACheckFailsOrHangs() async throws {
        let response = try await router(checks: [FailingCheck(), HangingCheck()])
            .respond(to: HTTPRequest(method: "GET", path: "/readyz"))
        #expect(response.status == 503)
        #expect(response.headers["Retry-After"] == "5")
        let checks = try #require(try json(response)["checks"] as? [String: [String: Any]])
        #expect(checks["apns"]?["error"] as? String == "connection refused")
        #expect((checks["slow"]?["error"] as? String)?.hasPrefix("no answer within") == true)
    }

    @Test func readyzFailsOnAClosedDatabase() async throws {
        let database = try await DatabaseFactory.open(url: "sqlite::memory:", logger: Logger(label: "test"))
        await database.close()
        let response = try await router(checks: [DatabaseReadiness(database: database)])
            .respond(to: HTTPRequest(method: "GET", path: "/readyz"))
        #expect(response.status == 503)
    }

    @Test func metricsArePrometheusText() async throws {
        let metrics = MetricsRegistry()
        metrics.counter("herald_test_total", help: "A test counter.").increment()
        let response = try await router(checks: [], metrics: metrics)
            .respond(to: HTTPRequest(method: "GET", path: "/metrics"))
        #expect(response.status == 200)
        #expect(response.headers["Content-Type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        #expect(String(decoding: response.body, as: UTF8.self).contains("herald_test_total 1\n"))
    }

    @Test("a check that ignores cancellation still answers within the timeout")
    func stuckCheckTimesOut() async throws {
        let gate = Gate()
        defer { gate.open() }
        let response = try await router(checks: [StuckCheck(gate: gate)])
            .respond(to: HTTPRequest(method: "GET", path: "/readyz"))
        #expect(response.status == 503)
        let checks = try #require(try json(response)["checks"] as? [String: [String: Any]])
        #expect((checks["stuck"]?["error"] as? String)?.hasPrefix("no answer within") == true)
    }

    @Test("/metrics runs its refreshers first, and renders without one that does not finish")
    func metricsRefreshers() async throws {
        let metrics = MetricsRegistry()
        let depth = metrics.gauge("herald_test_depth", help: "A sampled gauge.")
        let gate = Gate()
        defer { gate.open() }
        var routes = SystemRoutes(checks: [], metrics: metrics)
        routes.metricsRefreshTimeout = .milliseconds(200)
        routes.metricsRefreshers = [{ depth.set(42) }, { await gate.wait() }]
        var router = Router()
        routes.register(on: &router)
        let response = try await router.respond(to: HTTPRequest(method: "GET", path: "/metrics"))
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self).contains("herald_test_depth 42\n"))
    }
}
