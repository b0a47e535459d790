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

    /// An unlabelled gauge read when `/metrics` is rendered rather than set as it changes: for a
    /// value kept elsewhere anyway (a count of requests in flight), which then costs nothing per
    /// change. Several sources may report under one name (servers, relays); the gauge is their
    /// sum. A source that returns `nil` (its owner is gone) is dropped.
    public func gauge(_ name: String, help: String, reading: @escaping @Sendable () -> Double?) {
        declare(name, help: help, type: "gauge", buckets: []).addReading(reading)
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
        return family.recordedValue(for: labels)
    }

    /// Every sample of the family called `name` with its labels (a histogram's count as its value),
    /// empty when none was declared: what a page of the admin console shows.
    public func samples(_ name: String) -> [(labels: MetricLabels, value: Double)] {
        guard let family = families.withLock({ $0.byName[name] }) else { return [] }
        return family.recordedSamples().map { labels, reading in
            switch reading {
            case .value(let value): (labels, value)
            case .histogram(let histogram): (labels, Double(histogram.count))
            }
        }
    }

    /// Every family in the Prometheus text exposition format.
    ///
    /// Written as bytes: a label value is copied as it is unless it holds a character to escape,
    /// a sample's labels are written once for all its histogram buckets, and the buckets' bounds
    /// were formatted when the family was declared.
    public func render() -> String {
        let order = families.withLock { $0.order }
        var out: [UInt8] = []
        out.reserveCapacity(order.count * 256)
        for family in order {
            let name = family.name
            out.append(contentsOf: "# HELP ".utf8)
            out.append(contentsOf: name.utf8)
            out.append(UInt8(ascii: " "))
            out.append(contentsOf: family.help.utf8)
            out.append(contentsOf: "\n# TYPE ".utf8)
            out.append(contentsOf: name.utf8)
            out.append(UInt8(ascii: " "))
            out.append(contentsOf: family.type.utf8)
            out.append(UInt8(ascii: "\n"))
            for (labels, sample) in family.recordedSamples() {
                let pairs = Self.labelPairs(labels)
                switch sample {
                case .value(let value):
                    Self.line(name, "", pairs, nil, Self.format(value), into: &out)
                case .histogram(let histogram):
                    var cumulative: UInt64 = 0
                    for (index, bound) in family.renderedBuckets.enumerated() {
                        cumulative += histogram.bucketCounts[index]
                        Self.line(name, "_bucket", pairs, bound, String(cumulative), into: &out)
                    }
                    Self.line(name, "_bucket", pairs, "+Inf", String(histogram.count), into: &out)
                    Self.line(name, "_sum", pairs, nil, Self.format(histogram.sum), into: &out)
                    Self.line(name, "_count", pairs, nil, String(histogram.count), into: &out)
                }
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `name{pairs,le="bound"} value` and a newline; no braces when there are no labels.
    private static func line(
        _ name: String,
        _ suffix: StaticString,
        _ pairs: [UInt8],
        _ bound: String?,
        _ value: String,
        into out: inout [UInt8]
    ) {
        out.append(contentsOf: name.utf8)
        suffix.withUTF8Buffer { out.append(contentsOf: $0) }
        if !pairs.isEmpty || bound != nil {
            out.append(UInt8(ascii: "{"))
            out.append(contentsOf: pairs)
            if let bound {
                if !pairs.isEmpty { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: #"le=""#.utf8)
                out.append(contentsOf: bound.utf8)
                out.append(UInt8(ascii: "\""))
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: " "))
        out.append(contentsOf: value.utf8)
        out.append(UInt8(ascii: "\n"))
    }

    /// `a="x",b="y"`: values with `\`, `"` and newlines escaped (all ASCII, so escaping the
    /// UTF-8 bytes one by one is exact).
    private static func labelPairs(_ labels: MetricLabels) -> [UInt8] {
        var out: [UInt8] = []
        for (index, (name, value)) in labels.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: name.utf8)
            out.append(contentsOf: #"=""#.utf8)
            for byte in value.utf8 {
                switch byte {
                case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
                case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
                case UInt8(ascii: "\n"): out.append(contentsOf: #"\n"#.utf8)
                default: out.append(byte)
                }
            }
            out.append(UInt8(ascii: "\""))
        }
        return out
    }

    static func format(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}

/// One declared family: its description, and where its samples are.
///
/// Finding a label set's sample takes the family's lock; updating a sample does not: a counter's
/// or gauge's value is one atomic word, a histogram's observations have the sample's own lock.
/// Samples are never removed, so a ``LabelledCounter`` or ``LabelledHistogram`` found once stays
/// valid for good.
final class MetricFamily: Sendable {
    struct Entry {
        var labels: MetricLabels
        var value: ValueCell?
        var histogram: HistogramCell?
    }

    /// Samples in first-used order, and where each label set's sample is.
    struct Samples {
        var list: [Entry] = []
        var index: [MetricLabelKey: Int] = [:]
        /// The sample found last: a hot label set is found again by comparing its labels, which
        /// costs less than hashing them.
        var recent = -1
    }

    /// What one sample holds, read for rendering.
    enum Reading {
        case value(Double)
        case histogram(HistogramCell.State)
    }

    let name: String
    let help: String
    let type: String
    let buckets: [Double]
    /// `buckets` as `/metrics` writes them in `le`.
    let renderedBuckets: [String]
    private let samples = Mutex(Samples())
    /// The sample without labels, kept apart so that the many unlabelled gauges and counters
    /// updated on every request (requests in flight) never take the lock.
    let unlabelled: Entry
    /// `unlabelled`'s cell of a counter or gauge, reached without copying the entry.
    let unlabelledValue: ValueCell?

    init(name: String, help: String, type: String, buckets: [Double]) {
        self.name = name
        self.help = help
        self.type = type
        self.buckets = buckets
        self.renderedBuckets = buckets.map(MetricsRegistry.format)
        self.unlabelled = Self.makeEntry(labels: [], type: type, bucketCount: buckets.count)
        self.unlabelledValue = unlabelled.value
    }

    /// The value cell for `labels` of a counter or gauge.
    @inline(__always)
    func valueCell(for labels: MetricLabels) -> ValueCell? {
        labels.isEmpty ? unlabelledValue : sample(for: labels).value
    }

    private static func makeEntry(labels: MetricLabels, type: String, bucketCount: Int) -> Entry {
        type == "histogram"
            ? Entry(labels: labels, value: nil, histogram: HistogramCell(bucketCount: bucketCount))
            : Entry(labels: labels, value: ValueCell(), histogram: nil)
    }

    /// The sample for `labels`, created empty (not rendered until recorded) on first use.
    func sample(for labels: MetricLabels) -> Entry {
        guard !labels.isEmpty else { return unlabelled }
        return samples.withLock { samples in
            if samples.recent >= 0, MetricLabelKey.equal(samples.list[samples.recent].labels, labels) {
                return samples.list[samples.recent]
            }
            let index: Int
            if let existing = samples.index[MetricLabelKey(labels)] {
                index = existing
            } else {
                index = samples.list.count
                samples.list.append(Self.makeEntry(labels: labels, type: type, bucketCount: buckets.count))
                samples.index[MetricLabelKey(labels)] = index
            }
            samples.recent = index
            return samples.list[index]
        }
    }

    /// The recorded reading for `labels`, or `nil`: a counter's or gauge's value, a histogram's count.
    func recordedValue(for labels: MetricLabels) -> Double? {
        let entry: Entry?
        if labels.isEmpty {
            if let sum = readingsSum() { return (unlabelled.value?.value ?? 0) + sum }
            entry = unlabelled
        } else {
            entry = samples.withLock { samples in samples.index[MetricLabelKey(labels)].map { samples.list[$0] } }
        }
        switch entry.flatMap(Self.reading(of:)) {
        case .value(let value): return value
        case .histogram(let state): return Double(state.count)
        case nil: return nil
        }
    }

    /// The samples recorded so far, the unlabelled one first (with the sources' readings added),
    /// then in first-used order.
    func recordedSamples() -> [(MetricLabels, Reading)] {
        var recorded = ([unlabelled] + samples.withLock { $0.list }).compactMap { entry in
            Self.reading(of: entry).map { (entry.labels, $0) }
        }
        if let sum = readingsSum() {
            if case .value(let value)? = recorded.first.flatMap({ $0.0.isEmpty ? $0.1 : nil }) {
                recorded[0] = ([], .value(value + sum))
            } else {
                recorded.insert(([], .value(sum)), at: 0)
            }
        }
        return recorded
    }

    /// Sources of the unlabelled value read at render time (``MetricsRegistry/gauge(_:help:reading:)``).
    private let readings = Mutex<[@Sendable () -> Double?]>([])

    func addReading(_ reading: @escaping @Sendable () -> Double?) {
        readings.withLock { $0.append(reading) }
    }

    /// The live sources' sum, `nil` when there are none; drops the sources whose owner is gone.
    private func readingsSum() -> Double? {
        readings.withLock { readings -> Double? in
            guard !readings.isEmpty else { return nil }
            var sum = 0.0
            readings.removeAll { reading in
                guard let value = reading() else { return true }
                sum += value
                return false
            }
            return readings.isEmpty ? nil : sum
        }
    }

    private static func reading(of entry: Entry) -> Reading? {
        if let value = entry.value?.value { return .value(value) }
        if let state = entry.histogram?.state, state.count > 0 { return .histogram(state) }
        return nil
    }
}

/// A counter's or gauge's value as the bits of its `Double`, updated with one atomic operation.
final class ValueCell: Sendable {
    private let bits = Atomic<UInt64>(0)
    private let recorded = Atomic<Bool>(false)

    /// `nil` until first recorded.
    var value: Double? {
        guard recorded.load(ordering: .acquiring) else { return nil }
        return Double(bitPattern: bits.load(ordering: .relaxed))
    }

    func add(_ amount: Double) {
        var current = bits.load(ordering: .relaxed)
        while true {
            let (exchanged, found) = bits.compareExchange(
                expected: current,
                desired: (Double(bitPattern: current) + amount).bitPattern,
                ordering: .relaxed
            )
            if exchanged { break }
            current = found
        }
        markRecorded()
    }

    func set(_ value: Double) {
        bits.store(value.bitPattern, ordering: .relaxed)
        markRecorded()
    }

    private func markRecorded() {
        if !recorded.load(ordering: .relaxed) { recorded.store(true, ordering: .releasing) }
    }
}

/// One histogram sample's sum, count and per-bucket counts (not cumulative), behind its own lock.
final class HistogramCell: Sendable {
    struct State: Sendable {
        var sum: Double = 0
        var count: UInt64 = 0
        var bucketCounts: [UInt64]
    }

    private let current: Mutex<State>

    init(bucketCount: Int) {
        current = Mutex(State(bucketCounts: Array(repeating: 0, count: bucketCount)))
    }

    var state: State { current.withLock { $0 } }

    func observe(_ value: Double, buckets: [Double]) {
        let bucket = buckets.firstIndex { value <= $0 }
        current.withLock { state in
            state.sum += value
            state.count += 1
            if let bucket { state.bucketCounts[bucket] += 1 }
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
        family.valueCell(for: labels)?.add(amount)
    }

    /// The sample for `labels`, for a place that counts the same labels again and again:
    /// incrementing it takes no lock and allocates nothing.
    public func labelled(_ labels: MetricLabels) -> LabelledCounter {
        LabelledCounter(cell: family.sample(for: labels).value ?? ValueCell())
    }
}

/// One label set of a ``Counter``, found once (``Counter/labelled(_:)``).
public struct LabelledCounter: Sendable {
    let cell: ValueCell

    public func increment(by amount: Double = 1) {
        cell.add(amount)
    }
}

/// A value that goes up and down.
public struct Gauge: Sendable {
    let family: MetricFamily

    public func set(_ value: Double, labels: MetricLabels = []) {
        family.valueCell(for: labels)?.set(value)
    }

    public func add(_ amount: Double, labels: MetricLabels = []) {
        family.valueCell(for: labels)?.add(amount)
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
        family.sample(for: labels).histogram?.observe(value, buckets: family.buckets)
    }

    public func observe(_ duration: Duration, labels: MetricLabels = []) {
        observe(duration.seconds, labels: labels)
    }

    /// The sample for `labels`, for a place that observes the same labels again and again: it
    /// takes only the sample's own lock and allocates nothing.
    public func labelled(_ labels: MetricLabels) -> LabelledHistogram {
        LabelledHistogram(
            cell: family.sample(for: labels).histogram ?? HistogramCell(bucketCount: family.buckets.count),
            buckets: family.buckets
        )
    }
}

/// One label set of a ``Histogram``, found once (``Histogram/labelled(_:)``).
public struct LabelledHistogram: Sendable {
    let cell: HistogramCell
    let buckets: [Double]

    public func observe(_ value: Double) {
        cell.observe(value, buckets: buckets)
    }

    public func observe(_ duration: Duration) {
        observe(duration.seconds)
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    fileprivate var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
