import Foundation
import HTTPRouting
import HTTPServer
import HeraldAPI
import HeraldCore
import Storage
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

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
        #expect(try json(root)["api"] as? String == "/v1", "the root says where the API is")
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

    @Test("HERALD_METRICS_TOKEN: /metrics answers 401 without the bearer token, 200 with it")
    func metricsToken() async throws {
        let token = "metrics-token-0123456789abcdef"
        var routes = SystemRoutes(checks: [], metrics: MetricsRegistry())
        routes.metricsToken = try MetricsToken.load(environment: ["HERALD_METRICS_TOKEN": token])
        #expect(routes.metricsToken != nil)
        var router = Router()
        routes.register(on: &router)
        let cases: [(authorization: String?, status: Int, code: String?)] = [
            (nil, 401, "missing_metrics_token"),
            ("Basic bWV0cmljczp4", 401, "missing_metrics_token"),
            ("Bearer " + token.dropLast(), 401, "invalid_metrics_token"),
            ("Bearer " + token + "0", 401, "invalid_metrics_token"),
            ("Bearer some-api-key-0123456789", 401, "invalid_metrics_token"),
            ("Bearer " + token, 200, nil),
            ("bearer  " + token, 200, nil),
        ]
        for (authorization, status, code) in cases {
            var headers = HTTPHeaders()
            if let authorization { headers.replaceOrAdd(name: "Authorization", value: authorization) }
            let response = try await router.respond(to: HTTPRequest(method: "GET", path: "/metrics", headers: headers))
            #expect(response.status == status, "Authorization: \(authorization ?? "none")")
            let body = String(decoding: response.body, as: UTF8.self)
            if let code {
                let error = try #require(try json(response)["error"] as? [String: Any])
                #expect(error["code"] as? String == code)
                #expect((error["message"] as? String)?.contains("Authorization: Bearer <HERALD_METRICS_TOKEN>") == true)
                #expect(response.headers["WWW-Authenticate"] == "Bearer")
                #expect(!body.contains(token))
            }
        }
        #expect(!String(describing: routes.metricsToken!).contains(token))
    }

    @Test("HERALD_METRICS_TOKEN unset: /metrics stays open; set, it must be a usable token")
    func metricsTokenSetting() throws {
        #expect(try MetricsToken.load(environment: [:]) == nil)
        #expect(try MetricsToken.load(environment: ["HERALD_METRICS_TOKEN": "  "]) == nil)
        for bad in ["short", "has a space in it 0123456789", String(repeating: "x", count: 513)] {
            do {
                _ = try MetricsToken.load(environment: ["HERALD_METRICS_TOKEN": bad])
                Issue.record("\(bad) was accepted")
            } catch {
                #expect(error.problems.count == 1)
                #expect(error.problems[0].hasPrefix("HERALD_METRICS_TOKEN is not usable"))
                #expect(!error.problems[0].contains(bad))
            }
        }
    }

    @Test("/readyz names no host, port, user or database of an unreachable PostgreSQL")
    func readyzNamesNoDatabaseLocation() async throws {
        // A loopback port nothing listens on: bound, then closed.
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let port = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address -> Int in
                _ = Glibc.bind(socket, address, length)
                _ = getsockname(socket, address, &length)
                return Int(UInt16(bigEndian: pointer.pointee.sin_port))
            }
        }
        Glibc.close(socket)
        let url = "postgres://readyz_user:readyz_password@127.0.0.1:\(port)/readyz_database?connect_timeout=2"
        // The driver's own error names where it tried (that is what the log gets).
        var driverError: (any Error)?
        do {
            let database = try await DatabaseFactory.open(url: url, logger: Logger(label: "test"))
            await database.close()
        } catch {
            driverError = error
        }
        let error = try #require(driverError as? DatabaseError)
        #expect(error.code == .connectionFailed)
        #expect(String(describing: error).contains("\(port)"), "the driver's message: \(error)")

        let failure = DatabaseReadiness.failure(for: error)
        let response = try await router(checks: [ThrowingCheck(name: "database", error: failure)])
            .respond(to: HTTPRequest(method: "GET", path: "/readyz"))
        #expect(response.status == 503)
        let body = String(decoding: response.body, as: UTF8.self)
        let checks = try #require(try json(response)["checks"] as? [String: [String: Any]])
        #expect((checks["database"]?["error"] as? String)?.hasPrefix("unreachable") == true, "\(body)")
        for secret in ["127.0.0.1", "\(port)", "readyz_user", "readyz_password", "readyz_database", "postgres"] {
            #expect(!body.contains(secret), "/readyz names \(secret): \(body)")
        }
    }

    @Test("/readyz names no SQLite path: every database failure becomes its kind")
    func readinessFailureKinds() {
        let cases: [(DatabaseError.Code, String)] = [
            (.connectionFailed, "unreachable"), (.connectionLost, "unreachable"), (.lockTimeout, "busy"),
            (.acquireTimeout, "busy"), (.statementTimeout, "slow"), (.closed, "closed"), (.queryFailed, "failing"),
        ]
        for (code, kind) in cases {
            let error = DatabaseError(
                code: code,
                message: "cannot open SQLite database '/srv/secret/herald.sqlite': unable to open database file"
            )
            let summary = DatabaseReadiness.failure(for: error).summary
            #expect(summary.hasPrefix(kind + ":"), "\(code): \(summary)")
            #expect(!summary.contains("/srv/secret"))
        }
        #expect(DatabaseReadiness.failure(for: CancellationError()).summary.hasPrefix("unreachable"))
    }

    struct ThrowingCheck: ReadinessCheck {
        let name: String
        let error: any Error & Sendable
        func check() async throws { throw error }
    }
}
