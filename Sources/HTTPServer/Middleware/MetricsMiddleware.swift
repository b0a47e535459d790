public import HeraldCore

/// Counts requests and times them:
///
/// - `herald_http_requests_total{method,route,status}` (counter)
/// - `herald_http_request_duration_seconds{method,route}` (histogram)
///
/// `route` is the matched pattern or `unmatched`, and unknown methods are counted as `OTHER`,
/// so the label sets stay small whatever clients send.
public struct MetricsMiddleware: HTTPMiddleware {
    private let requests: Counter
    private let duration: Histogram

    public init(metrics: MetricsRegistry = .shared) {
        self.requests = metrics.counter("herald_http_requests_total", help: "HTTP requests answered.")
        self.duration = metrics.histogram(
            "herald_http_request_duration_seconds",
            help: "Time to answer an HTTP request, in seconds."
        )
    }

    public func handle(
        _ request: HTTPRequest,
        next: @Sendable (HTTPRequest) async throws -> HTTPResponse
    ) async throws -> HTTPResponse {
        let clock = ContinuousClock()
        let start = clock.now
        var response: HTTPResponse?
        defer {
            let method = Self.knownMethods.contains(request.method) ? request.method : "OTHER"
            let route = RouteRecorder.label(for: response)
            requests.increment(
                labels: [("method", method), ("route", route), ("status", String(response?.status ?? 500))]
            )
            duration.observe(start.duration(to: clock.now), labels: [("method", method), ("route", route)])
        }
        response = try await next(request)
        return response!
    }

    private static let knownMethods: Set<String> = [
        "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE",
    ]
}
