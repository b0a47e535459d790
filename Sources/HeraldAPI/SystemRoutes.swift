public import HTTPRouting
public import HeraldCore

/// Something `/readyz` asks before declaring Herald ready: the database now, APNs connections later.
public protocol ReadinessCheck: Sendable {
    /// A short name shown in the `/readyz` body, e.g. `database`.
    var name: String { get }
    /// Throws, with a message an operator can act on, when the dependency is not usable.
    func check() async throws
}

/// The routes every Herald process serves without an API key: `/`, `/healthz`, `/readyz` and
/// `/metrics` (DESIGN.md, HTTP API conventions); `/metrics` takes a bearer token of its own when
/// ``metricsToken`` is set.
public struct SystemRoutes: Sendable {
    public var checks: [any ReadinessCheck]
    public var metrics: MetricsRegistry
    /// How long one readiness check may take before it counts as failed.
    public var checkTimeout: Duration
    /// Run before `/metrics` renders, to bring sampled gauges up to date (the job queue's depth);
    /// each may take ``metricsRefreshTimeout`` at most, after which the last values are shown.
    public var metricsRefreshers: [@Sendable () async -> Void] = []
    public var metricsRefreshTimeout: Duration = .seconds(1)
    /// `HERALD_METRICS_TOKEN`: when set, `/metrics` answers 401 without it; nil serves anyone.
    public var metricsToken: MetricsToken?

    public init(checks: [any ReadinessCheck], metrics: MetricsRegistry = .shared, checkTimeout: Duration = .seconds(2))
    {
        self.checks = checks
        self.metrics = metrics
        self.checkTimeout = checkTimeout
    }

    public func register(on router: inout Router) {
        // Where to go from the root; a load balancer's check of `/` gets its 200.
        let root = HTTPResponse.json([
            "service": "herald",
            "api": "/v1",
            "health": "/healthz",
            "ready": "/readyz",
        ])
        router.get("/") { _ in root }
        router.get("/healthz") { _ in .json(["status": "ok"]) }
        router.get("/readyz") { _ in await readiness() }
        router.get("/metrics") { [metrics, metricsRefreshers, metricsRefreshTimeout, metricsToken] request in
            // Checked before the refreshers run: a refused scrape costs no database query.
            if let metricsToken {
                do throws(HTTPError) {
                    try metricsToken.authorize(request)
                } catch {
                    return error.response
                }
            }
            if !metricsRefreshers.isEmpty {
                await withTaskGroup(of: Void.self) { group in
                    for refresh in metricsRefreshers {
                        group.addTask { try? await Self.withTimeout(metricsRefreshTimeout) { await refresh() } }
                    }
                }
            }
            return .text(metrics.render(), contentType: "text/plain; version=0.0.4; charset=utf-8")
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
        // `body` runs in a task of its own, not a child: a task group would wait for a body that
        // ignores cancellation (a query stuck in the database driver) past the timeout.
        let (outcomes, input) = AsyncStream<Result<Void, any Error>?>.makeStream()
        let work = Task {
            do {
                try await body()
                input.yield(.success(()))
            } catch {
                input.yield(.failure(error))
            }
        }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            input.yield(nil)
        }
        var iterator = outcomes.makeAsyncIterator()
        let first = await iterator.next() ?? nil
        input.finish()
        timer.cancel()
        switch first {
        case .success?:
            return
        case .failure(let error)?:
            throw error
        case nil:
            work.cancel()
            throw TimeoutError(timeout: timeout)
        }
    }
}
