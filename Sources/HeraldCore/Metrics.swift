import Synchronization

/// Label pairs in the order given; values are escaped when rendered.
public typealias MetricLabels = [(String, String)]

/// An in-process metrics registry rendered in the Prometheus text format (version 0.0.4).
///
/// Families are declared once with their help text; samples are keyed by their label values.
/// All operations take one short lock, so recording is safe from any thread.
///
/// ```swift
/// let requests = registry.counter("herald_http_requests_total", help: "HTTP requests answered.")
/// requests.increment(labels: [("route", "/healthz"), ("status", "200")])
/// ```
public final class MetricsRegistry: Sendable {
    /// The registry `/metrics` serves unless a test builds its own.
    public static let shared = MetricsRegistry()

    fileprivate struct Family {
        var name: String
        var help: String
        var type: String
        var buckets: [Double]
        var samples: [String: Sample] = [:]
        var order: [String] = []
    }

    fileprivate struct Sample {
        var labels: MetricLabels
        var value: Double = 0
        var bucketCounts: [UInt64] = []
        var count: UInt64 = 0
    }

    private let families = Mutex<[String: Family]>([:])
    private let familyOrder = Mutex<[String]>([])

    public init() {}

    public func counter(_ name: String, help: String) -> Counter {
        declare(name, help: help, type: "counter", buckets: [])
        return Counter(registry: self, name: name)
    }

    public func gauge(_ name: String, help: String) -> Gauge {
        declare(name, help: help, type: "gauge", buckets: [])
        return Gauge(registry: self, name: name)
    }

    /// A histogram with the given upper bounds (seconds for latencies); `+Inf` is implied.
    public func histogram(_ name: String, help: String, buckets: [Double] = Histogram.latencyBuckets) -> Histogram {
        declare(name, help: help, type: "histogram", buckets: buckets.sorted())
        return Histogram(registry: self, name: name)
    }

    private func declare(_ name: String, help: String, type: String, buckets: [Double]) {
        let isNew = families.withLock { families -> Bool in
            if let existing = families[name] {
                precondition(existing.type == type, "metric \(name) declared as \(existing.type) and \(type)")
                return false
            }
            families[name] = Family(name: name, help: help, type: type, buckets: buckets)
            return true
        }
        if isNew { familyOrder.withLock { $0.append(name) } }
    }

    fileprivate func update(_ name: String, labels: MetricLabels, _ body: (inout Sample, [Double]) -> Void) {
        let key = labels.map { "\($0.0)=\($0.1)" }.joined(separator: "\u{1}")
        families.withLock { families in
            guard var family = families[name] else { return }
            families[name] = nil  // keep the value uniquely referenced while it is mutated
            if family.samples[key] == nil {
                family.samples[key] = Sample(
                    labels: labels,
                    bucketCounts: Array(repeating: 0, count: family.buckets.count)
                )
                family.order.append(key)
            }
            body(&family.samples[key]!, family.buckets)
            families[name] = family
        }
    }

    /// The current value of one sample (a counter or gauge value, or a histogram's count); for tests.
    public func value(_ name: String, labels: MetricLabels = []) -> Double? {
        let key = labels.map { "\($0.0)=\($0.1)" }.joined(separator: "\u{1}")
        return families.withLock { families in
            guard let family = families[name], let sample = family.samples[key] else { return nil }
            return family.type == "histogram" ? Double(sample.count) : sample.value
        }
    }

    /// Every family in the Prometheus text exposition format.
    public func render() -> String {
        let order = familyOrder.withLock { $0 }
        let snapshot = families.withLock { $0 }
        var out = ""
        for name in order {
            guard let family = snapshot[name] else { continue }
            out += "# HELP \(name) \(family.help)\n# TYPE \(name) \(family.type)\n"
            for key in family.order {
                guard let sample = family.samples[key] else { continue }
                if family.type == "histogram" {
                    var cumulative: UInt64 = 0
                    for (index, bound) in family.buckets.enumerated() {
                        cumulative += sample.bucketCounts[index]
                        let labels = sample.labels + [("le", Self.format(bound))]
                        out += "\(name)_bucket\(Self.render(labels)) \(cumulative)\n"
                    }
                    out += "\(name)_bucket\(Self.render(sample.labels + [("le", "+Inf")])) \(sample.count)\n"
                    out += "\(name)_sum\(Self.render(sample.labels)) \(Self.format(sample.value))\n"
                    out += "\(name)_count\(Self.render(sample.labels)) \(sample.count)\n"
                } else {
                    out += "\(name)\(Self.render(sample.labels)) \(Self.format(sample.value))\n"
                }
            }
        }
        return out
    }

    private static func render(_ labels: MetricLabels) -> String {
        guard !labels.isEmpty else { return "" }
        let body = labels.map { name, value in
            var escaped = ""
            for character in value {
                switch character {
                case "\\": escaped += "\\\\"
                case "\"": escaped += "\\\""
                case "\n": escaped += "\\n"
                default: escaped.append(character)
                }
            }
            return "\(name)=\"\(escaped)\""
        }
        return "{" + body.joined(separator: ",") + "}"
    }

    private static func format(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}

/// A monotonically increasing count.
public struct Counter: Sendable {
    let registry: MetricsRegistry
    let name: String

    public func increment(by amount: Double = 1, labels: MetricLabels = []) {
        registry.update(name, labels: labels) { sample, _ in sample.value += amount }
    }
}

/// A value that goes up and down.
public struct Gauge: Sendable {
    let registry: MetricsRegistry
    let name: String

    public func set(_ value: Double, labels: MetricLabels = []) {
        registry.update(name, labels: labels) { sample, _ in sample.value = value }
    }

    public func add(_ amount: Double, labels: MetricLabels = []) {
        registry.update(name, labels: labels) { sample, _ in sample.value += amount }
    }
}

/// Observations counted into cumulative buckets.
public struct Histogram: Sendable {
    /// Upper bounds in seconds from 0.5 ms to 10 s, for request latencies.
    public static let latencyBuckets: [Double] = [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]

    let registry: MetricsRegistry
    let name: String

    public func observe(_ value: Double, labels: MetricLabels = []) {
        registry.update(name, labels: labels) { sample, buckets in
            sample.value += value
            sample.count += 1
            if let index = buckets.firstIndex(where: { value <= $0 }) { sample.bucketCounts[index] += 1 }
        }
    }

    public func observe(_ duration: Duration, labels: MetricLabels = []) {
        let (seconds, attoseconds) = duration.components
        observe(Double(seconds) + Double(attoseconds) / 1e18, labels: labels)
    }
}
