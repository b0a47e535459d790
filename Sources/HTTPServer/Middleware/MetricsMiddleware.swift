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
        let start = ContinuousClock.now
        var response: HTTPResponse?
        defer { record(request, response, since: start) }
        response = try await next(request)
        return response!
    }

    public func handleImmediately(_ request: HTTPRequest, next: (HTTPRequest) -> HTTPResponse?) -> HTTPResponse? {
        let start = ContinuousClock.now
        guard let response = next(request) else { return nil }
        record(request, response, since: start)
        return response
    }

    private func record(_ request: HTTPRequest, _ response: HTTPResponse?, since start: ContinuousClock.Instant) {
        let method = Self.isKnown(method: request.method) ? request.method : "OTHER"
        let route = RouteRecorder.label(for: response)
        requests.increment(
            labels: [("method", method), ("route", route), ("status", Self.statusLabel(response?.status ?? 500))]
        )
        duration.observe(start.duration(to: .now), labels: [("method", method), ("route", route)])
    }

    /// The status as a label, without formatting the common ones again for every request.
    private static func statusLabel(_ status: Int) -> String {
        switch status {
        case 200: "200"
        case 202: "202"
        case 204: "204"
        case 400: "400"
        case 404: "404"
        case 503: "503"
        default: String(status)
        }
    }

    /// A method of RFC 9110 or PATCH (compared rather than hashed: this runs for every request).
    private static func isKnown(method: String) -> Bool {
        switch method {
        case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE": true
        default: false
        }
    }
}
