public import HTTPServer
public import HeraldCore

/// Something `/readyz` asks before declaring Herald ready: the database now, APNs connections later.
public protocol ReadinessCheck: Sendable {
    /// A short name shown in the `/readyz` body, e.g. `database`.
    var name: String { get }
    /// Throws, with a message an operator can act on, when the dependency is not usable.
    func check() async throws
}

/// The routes every Herald process serves without authentication: `/`, `/healthz`, `/readyz`
/// and `/metrics` (DESIGN.md, HTTP API conventions).
public struct SystemRoutes: Sendable {
    public var checks: [any ReadinessCheck]
    public var metrics: MetricsRegistry
    /// How long one readiness check may take before it counts as failed.
    public var checkTimeout: Duration

    public init(checks: [any ReadinessCheck], metrics: MetricsRegistry = .shared, checkTimeout: Duration = .seconds(2))
    {
        self.checks = checks
        self.metrics = metrics
        self.checkTimeout = checkTimeout
    }

    public func register(on router: inout Router) {
        router.get("/") { _ in HTTPResponse(status: 200) }
        router.head("/") { _ in HTTPResponse(status: 200) }
        router.get("/healthz") { _ in .json(["status": "ok"]) }
        router.get("/readyz") { _ in await readiness() }
        router.get("/metrics") { [metrics] _ in
            .text(metrics.render(), contentType: "text/plain; version=0.0.4; charset=utf-8")
        }
    }

    struct Readiness: Encodable, Sendable {
        var status: String
        var checks: [String: CheckResult]
    }

    struct CheckResult: Encodable, Sendable {
        var status: String
        var error: String?
    }

    /// Runs every check concurrently, each bounded by ``checkTimeout``.
    func readiness() async -> HTTPResponse {
        let timeout = checkTimeout
        let results = await withTaskGroup(of: (String, CheckResult).self) { group in
            for check in checks {
                group.addTask {
                    do {
                        try await Self.withTimeout(timeout) { try await check.check() }
                        return (check.name, CheckResult(status: "ok"))
                    } catch {
                        return (check.name, CheckResult(status: "failed", error: String(describing: error)))
                    }
                }
            }
            var results: [String: CheckResult] = [:]
            for await (name, result) in group { results[name] = result }
            return results
        }
        let ready = results.values.allSatisfy { $0.status == "ok" }
        var response = HTTPResponse.json(
            Readiness(status: ready ? "ok" : "unavailable", checks: results),
            status: ready ? 200 : 503
        )
        if !ready { response.headers.replaceOrAdd(name: "Retry-After", value: "5") }
        return response
    }

    struct TimeoutError: Error, CustomStringConvertible {
        var timeout: Duration
        var description: String { "no answer within \(timeout)" }
    }

    static func withTimeout(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await body()
                return true
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return false
            }
            let finished = try await group.next() ?? false
            group.cancelAll()
            if !finished { throw TimeoutError(timeout: timeout) }
        }
    }
}
