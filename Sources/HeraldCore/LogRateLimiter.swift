import Foundation
import Synchronization

/// Lets one log line per key through per interval, and counts the ones it holds back, so that
/// an event anyone can cause (an APNs refusal of a relayed push) cannot flood the log.
///
/// ```swift
/// let limiter = LogRateLimiter<String>()
/// if let suppressed = limiter.admit(reason) {
///     logger.warning("refused", metadata: ["reason": .string(reason), "suppressed": .int(suppressed)])
/// }
/// ```
///
/// Each key's window starts with the first line let through; lines for that key in the next
/// `interval` are suppressed and counted, and the next line let through carries that count.
/// Metrics are the caller's: count every event whether or not its line is logged.
///
/// Keys should be few (a reason, not a token): past ``maximumKeys`` distinct keys, keys not yet
/// tracked share one window, so that many keys cannot flood the log either.
public final class LogRateLimiter<Key: Hashable & Sendable>: Sendable {
    /// Distinct keys tracked before new ones share a window.
    public static var maximumKeys: Int { 256 }

    private struct Window {
        var start: Duration
        var suppressed = 0
    }

    private struct State {
        var windows: [Key: Window] = [:]
        /// The window that keys beyond ``maximumKeys`` share.
        var overflow: Window?
    }

    private let interval: Duration
    /// A monotonic reading: the clock's ``HeraldClock/uptime()``.
    private let now: @Sendable () -> Duration
    private let state = Mutex(State())

    /// - Parameters:
    ///   - interval: how long a key stays quiet after a line it let through.
    ///   - clock: its ``HeraldClock/uptime()`` times the windows; tests pass a ``ManualClock``.
    public init(interval: Duration = .seconds(1), clock: any HeraldClock = SystemClock()) {
        self.interval = interval
        self.now = { clock.uptime() }
    }

    /// Whether to log this line for `key`: nil to drop it (it is counted), or the number of lines
    /// for `key` dropped since the last one let through.
    public func admit(_ key: Key) -> Int? {
        let time = now()
        return state.withLock { state -> Int? in
            if state.windows[key] == nil, state.windows.count >= Self.maximumKeys {
                state.windows = state.windows.filter { time - $0.value.start < interval || $0.value.suppressed > 0 }
                if state.windows.count >= Self.maximumKeys {
                    return Self.admit(at: time, interval: interval, window: &state.overflow)
                }
            }
            return Self.admit(at: time, interval: interval, window: &state.windows[key])
        }
    }

    private static func admit(at time: Duration, interval: Duration, window: inout Window?) -> Int? {
        guard var current = window else {
            window = Window(start: time)
            return 0
        }
        if time - current.start < interval {
            current.suppressed += 1
            window = current
            return nil
        }
        window = Window(start: time)
        return current.suppressed
    }
}
