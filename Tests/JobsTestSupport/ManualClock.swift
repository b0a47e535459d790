public import Foundation
public import Jobs
import Synchronization

// Shared by the test targets that run a job queue (Jobs, Notifications).

/// A job clock that moves only when the test moves it.
public final class ManualClock: JobClock {
    private let current: Mutex<Date>

    /// Starts at `start`: by default a fixed instant, so that schedules are reproducible.
    public init(_ start: Date = Date(timeIntervalSince1970: 1_790_000_000)) {
        current = Mutex(start)
    }

    public func now() -> Date { current.withLock { $0 } }

    public func advance(_ seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }

    public func set(_ date: Date) {
        current.withLock { $0 = date }
    }
}
