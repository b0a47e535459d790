import Synchronization

/// Label pairs in the order given; values are escaped when rendered.
public typealias MetricLabels = [(String, String)]

/// An in-process metrics registry rendered in the Prometheus text format (version 0.0.4).
///
/// Families are declared once with their help text; samples are keyed by their label values.
/// Each family has its own short lock, so recording is safe from any thread and metrics do not
/// contend with each other.
///
/// ```swift
/// let requests = registry.counter("herald_http_requests_total", help: "HTTP requests answered.")
/// requests.increment(labels: [("route", "/healthz"), ("status", "200")])
/// ```
public final class MetricsRegistry: Sendable {
    /// The registry `/metrics` serves unless a test builds its own.
    public static let shared = MetricsRegistry()

    /// Families by name, and their declaration order for rendering. Only declaring and
    /// rendering take this lock: a ``Counter``, ``Gauge`` or ``Histogram`` holds its family and
    /// records through the family's own lock.
    private let families = Mutex<(byName: [String: MetricFamily], order: [MetricFamily])>(([:], []))

    public init() {}

    public func counter(_ name: String, help: String) -> Counter {
        Counter(family: declare(name, help: help, type: "counter", buckets: []))
    }

    public func gauge(_ name: String, help: String) -> Gauge {
        Gauge(family: declare(name, help: help, type: "gauge", buckets: []))
    }

    /// A histogram with the given upper bounds (seconds for latencies); `+Inf` is implied.
    public func histogram(_ name: String, help: String, buckets: [Double] = Histogram.latencyBuckets) -> Histogram {
        Histogram(family: declare(name, help: help, type: "histogram", buckets: buckets.sorted()))
    }

    /// The family called `name`, created on first declaration; later declarations get the first
    /// one (its help and buckets).
    private func declare(_ name: String, help: String, type: String, buckets: [Double]) -> MetricFamily {
        families.withLock { families in
            if let existing = families.byName[name] {
                precondition(existing.type == type, "metric \(name) declared as \(existing.type) and \(type)")
                return existing
            }
            let family = MetricFamily(name: name, help: help, type: type, buckets: buckets)
            families.byName[name] = family
            families.order.append(family)
            return family
        }
    }

    /// The current value of one sample (a counter or gauge value, or a histogram's count); for tests.
    public func value(_ name: String, labels: MetricLabels = []) -> Double? {
        guard let family = families.withLock({ $0.byName[name] }) else { return nil }
        if labels.isEmpty, family.type != "histogram" { return family.unlabelledValue }
        return family.samples.withLock { samples in
            guard let index = samples.index[MetricLabelKey(labels)] else { return nil }
            let sample = samples.list[index]
            return family.type == "histogram" ? Double(sample.count) : sample.value
        }
    }

    /// Every family in the Prometheus text exposition format.
    public func render() -> String {
        let order = families.withLock { $0.order }
        var out = ""
        for family in order {
            let name = family.name
            let samples = family.samples.withLock { $0.list }
            out += "# HELP \(name) \(family.help)\n# TYPE \(name) \(family.type)\n"
            if family.type != "histogram", let value = family.unlabelledValue {
                out += "\(name) \(Self.format(value))\n"
            }
            for sample in samples {
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

/// One declared family: its description, and its samples behind their own lock.
final class MetricFamily: Sendable {
    struct Sample {
        var labels: MetricLabels
        var value: Double = 0
        var bucketCounts: [UInt64] = []
        var count: UInt64 = 0
    }

    /// Samples in first-recorded order, and where each label set's sample is.
    struct Samples {
        var list: [Sample] = []
        var index: [MetricLabelKey: Int] = [:]
        /// The sample updated last: a hot label set is found again by comparing its labels,
        /// which costs less than hashing them.
        var recent = -1
    }

    let name: String
    let help: String
    let type: String
    let buckets: [Double]
    /// Labelled samples, and a histogram's unlabelled one.
    let samples = Mutex(Samples())
    /// A counter's or gauge's sample without labels, as the bits of its `Double`: updated with one
    /// atomic operation instead of the lock, which threads updating one unlabelled gauge (such as
    /// requests in flight) on every request contended for.
    private let unlabelledBits = Atomic<UInt64>(0)
    private let unlabelledRecorded = Atomic<Bool>(false)

    init(name: String, help: String, type: String, buckets: [Double]) {
        self.name = name
        self.help = help
        self.type = type
        self.buckets = buckets
    }

    /// The unlabelled sample of a counter or gauge; `nil` until first recorded.
    var unlabelledValue: Double? {
        guard unlabelledRecorded.load(ordering: .acquiring) else { return nil }
        return Double(bitPattern: unlabelledBits.load(ordering: .relaxed))
    }

    /// Adds `amount` to a counter's or gauge's sample for `labels`.
    func add(_ amount: Double, labels: MetricLabels) {
        guard labels.isEmpty else {
            update(labels: labels) { sample, _ in sample.value += amount }
            return
        }
        var current = unlabelledBits.load(ordering: .relaxed)
        while true {
            let (exchanged, found) = unlabelledBits.compareExchange(
                expected: current,
                desired: (Double(bitPattern: current) + amount).bitPattern,
                ordering: .relaxed
            )
            if exchanged { break }
            current = found
        }
        markUnlabelledRecorded()
    }

    /// Sets a gauge's sample for `labels`.
    func set(_ value: Double, labels: MetricLabels) {
        guard labels.isEmpty else {
            update(labels: labels) { sample, _ in sample.value = value }
            return
        }
        unlabelledBits.store(value.bitPattern, ordering: .relaxed)
        markUnlabelledRecorded()
    }

    private func markUnlabelledRecorded() {
        if !unlabelledRecorded.load(ordering: .relaxed) { unlabelledRecorded.store(true, ordering: .releasing) }
    }

    /// Runs `body` on the sample for `labels`, created at zero on first use.
    func update(labels: MetricLabels, _ body: (inout Sample, [Double]) -> Void) {
        let buckets = self.buckets
        samples.withLock { samples in
            let index: Int
            if samples.recent >= 0, MetricLabelKey.equal(samples.list[samples.recent].labels, labels) {
                index = samples.recent
            } else if let existing = samples.index[MetricLabelKey(labels)] {
                index = existing
            } else {
                index = samples.list.count
                samples.list.append(Sample(labels: labels, bucketCounts: Array(repeating: 0, count: buckets.count)))
                samples.index[MetricLabelKey(labels)] = index
            }
            samples.recent = index
            body(&samples.list[index], buckets)
        }
    }
}

/// A label set as a dictionary key: the pairs in order, hashed without building a string.
struct MetricLabelKey: Hashable {
    let labels: MetricLabels

    init(_ labels: MetricLabels) {
        self.labels = labels
    }

    static func == (lhs: Self, rhs: Self) -> Bool {
        equal(lhs.labels, rhs.labels)
    }

    static func equal(_ lhs: MetricLabels, _ rhs: MetricLabels) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for index in lhs.indices where lhs[index].0 != rhs[index].0 || lhs[index].1 != rhs[index].1 {
            return false
        }
        return true
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(labels.count)
        for (name, value) in labels {
            hasher.combine(name)
            hasher.combine(value)
        }
    }
}

/// A monotonically increasing count.
public struct Counter: Sendable {
    let family: MetricFamily

    public func increment(by amount: Double = 1, labels: MetricLabels = []) {
        family.add(amount, labels: labels)
    }
}

/// A value that goes up and down.
public struct Gauge: Sendable {
    let family: MetricFamily

    public func set(_ value: Double, labels: MetricLabels = []) {
        family.set(value, labels: labels)
    }

    public func add(_ amount: Double, labels: MetricLabels = []) {
        family.add(amount, labels: labels)
    }
}

/// Observations counted into cumulative buckets.
public struct Histogram: Sendable {
    /// Upper bounds in seconds from 0.5 ms to 10 s, for request latencies.
    public static let latencyBuckets: [Double] = [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]

    let family: MetricFamily

    public func observe(_ value: Double, labels: MetricLabels = []) {
        family.update(labels: labels) { sample, buckets in
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
