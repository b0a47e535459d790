public import HeraldCore
import Synchronization

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
    /// The samples of the label sets seen so far, found by comparing labels: a few routes and
    /// statuses make a short list, and a route's label is its pattern string, which compares
    /// by identity. Looking up the families instead cost a label array per request.
    private let samples = SampleCache()

    public init(metrics: MetricsRegistry = .shared) {
        self.requests = metrics.counter("herald_http_requests_total", help: "HTTP requests answered.")
        self.duration = metrics.histogram(
            "herald_http_request_duration_seconds",
            help: "Time to answer an HTTP request, in seconds."
        )
    }

    public func handle(
        _ request: HTTPRequest,
        answer: HTTPResponseSink,
        next: (HTTPRequest, HTTPResponseSink) -> Void
    ) {
        let start = ContinuousClock.now
        let method = Self.isKnown(method: request.method) ? request.method : "OTHER"
        next(
            request,
            answer.map { [self] result in
                record(method, result, since: start)
                return result
            }
        )
    }

    private func record(_ method: String, _ result: HTTPResult, since start: ContinuousClock.Instant) {
        let route = RouteLabel.label(for: result)
        let status: Int
        switch result {
        case .success(let response): status = response.status
        case .failure: status = 500
        }
        let (count, time) = samples.find(method: method, route: route, status: status) {
            (
                requests.labelled([("method", method), ("route", route), ("status", Self.statusLabel(status))]),
                duration.labelled([("method", method), ("route", route)])
            )
        }
        count.increment()
        time.observe(start.duration(to: .now))
    }

    /// The counter and histogram samples per (method, route, status), added on first use.
    private final class SampleCache: Sendable {
        private struct Entry {
            var method: String
            var route: String
            var status: Int
            var samples: (LabelledCounter, LabelledHistogram)
        }

        private let entries = Mutex<[Entry]>([])

        func find(
            method: String,
            route: String,
            status: Int,
            orMake make: () -> (LabelledCounter, LabelledHistogram)
        ) -> (LabelledCounter, LabelledHistogram) {
            let found = entries.withLock { entries -> (LabelledCounter, LabelledHistogram)? in
                var index = 0
                while index < entries.count {
                    if entries[index].status == status, entries[index].route == route, entries[index].method == method {
                        return entries[index].samples
                    }
                    index += 1
                }
                return nil
            }
            if let found { return found }
            let made = make()
            entries.withLock { $0.append(Entry(method: method, route: route, status: status, samples: made)) }
            return made
        }
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
