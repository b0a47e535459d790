import Foundation
import HeraldCore
import Synchronization

/// Per-minute counts of the last hour, kept from cumulative counters: the overview's charts.
///
/// A value, fed the counters' totals at any moment (``record(_:minute:)``) and asked for the
/// last 60 minutes (``perMinute(endingAt:)``): each minute's count is its last total minus the
/// previous minute's. A minute without a sample counts 0, and a total that went down (the counter
/// of another process) counts from 0.
struct TrendWindow: Sendable, Equatable {
    /// The minute (since 1970) and the totals last seen in it, oldest first, at most 61.
    private(set) var minutes: [(minute: Int64, totals: [Double])] = []
    let seriesCount: Int

    init(seriesCount: Int) {
        self.seriesCount = seriesCount
    }

    /// The first sample is also the baseline of the minute before it: what is counted after it,
    /// in its own minute, shows.
    mutating func record(_ totals: [Double], minute: Int64) {
        precondition(totals.count == seriesCount)
        if minutes.isEmpty { minutes.append((minute - 1, totals)) }
        if let last = minutes.last, last.minute == minute {
            minutes[minutes.count - 1].totals = totals
        } else if minutes.last.map({ $0.minute < minute }) ?? true {
            minutes.append((minute, totals))
        }
        while let first = minutes.first, first.minute < minute - 60 { minutes.removeFirst() }
    }

    /// Per series, the 60 minutes ending with `minute` (oldest first).
    func perMinute(endingAt minute: Int64) -> [[Double]] {
        var result = Array(repeating: Array(repeating: 0.0, count: 60), count: seriesCount)
        for index in minutes.indices.dropFirst() {
            let (at, totals) = minutes[index]
            let previous = minutes[index - 1]
            let slot = Int(at - (minute - 59))
            guard (0..<60).contains(slot) else { continue }
            for series in 0..<seriesCount {
                let delta = totals[series] - previous.totals[series]
                // A gap of several minutes puts what happened in it on the minute it was seen.
                result[series][slot] = delta >= 0 ? delta : totals[series]
            }
        }
        return result
    }

    static func == (lhs: TrendWindow, rhs: TrendWindow) -> Bool {
        lhs.seriesCount == rhs.seriesCount && lhs.minutes.map(\.minute) == rhs.minutes.map(\.minute)
            && lhs.minutes.map(\.totals) == rhs.minutes.map(\.totals)
    }
}

/// Samples the counters the overview charts every few seconds: sends, failures and dead tokens
/// (`herald_notification_tokens_total` by result). Counts this instance's work: each instance
/// behind a load balancer charts its own.
final class AdminTrends: Service {
    static let series = ["Sent", "Failed", "Dead tokens"]
    private let window = Mutex(TrendWindow(seriesCount: AdminTrends.series.count))
    private let metrics: MetricsRegistry
    private let clock: any HeraldClock
    private let interval: Duration
    /// Finished by ``triggerGracefulShutdown()``.
    private let shutdown = AsyncStream.makeStream(of: Void.self)

    init(metrics: MetricsRegistry = .shared, clock: any HeraldClock, interval: Duration = .seconds(5)) {
        self.metrics = metrics
        self.clock = clock
        self.interval = interval
    }

    /// Records the counters' totals now.
    func sample() {
        var totals = [0.0, 0.0, 0.0]
        for (labels, value) in metrics.samples("herald_notification_tokens_total") {
            switch labels.first(where: { $0.0 == "result" })?.1 {
            case "sent": totals[0] += value
            case "rejected", "failed": totals[1] += value
            case "dead": totals[2] += value
            default: break
            }
        }
        let minute = Self.minute(of: clock.now())
        window.withLock { $0.record(totals, minute: minute) }
    }

    /// The last hour, per series, oldest minute first, and the minute it ends with.
    func lastHour() -> (series: [[Double]], endingAt: Date) {
        sample()
        let minute = Self.minute(of: clock.now())
        let series = window.withLock { $0.perMinute(endingAt: minute) }
        return (series, Date(timeIntervalSince1970: TimeInterval(minute * 60)))
    }

    static func minute(of date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 / 60).rounded(.down))
    }

    func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                while !Task.isCancelled {
                    sample()
                    try? await Task.sleep(for: interval)
                }
            }
            for await _ in shutdown.stream {}
            group.cancelAll()
        }
    }

    func triggerGracefulShutdown() {
        shutdown.continuation.finish()
    }
}
