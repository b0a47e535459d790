import HeraldCore

/// Counters of rare client events (recording takes a lock, so nothing is counted per successful
/// request; the APNs layer counts responses).
struct HTTP2ClientMetrics: Sendable {
    let connects: Counter
    let goAways: Counter
    let connectionFailures: Counter
    let requestFailures: Counter

    init(registry: MetricsRegistry) {
        connects = registry.counter(
            "herald_http2_client_connects_total",
            help: "HTTP/2 client connection attempts by result."
        )
        goAways = registry.counter(
            "herald_http2_client_goaways_total",
            help: "GOAWAY frames received by HTTP/2 client connections, by error code."
        )
        connectionFailures = registry.counter(
            "herald_http2_client_connection_failures_total",
            help: "HTTP/2 client connections that ended other than by close(), by cause."
        )
        requestFailures = registry.counter(
            "herald_http2_client_request_failures_total",
            help: "HTTP/2 client requests that got no response, by cause and retry safety."
        )
    }
}
