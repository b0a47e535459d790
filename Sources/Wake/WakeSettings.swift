public import Foundation
public import HeraldCore

/// The wake schedules' settings for `herald serve`: `HERALD_WAKE_MIN_INTERVAL` (the least time
/// between two wake pings to one device, default 20 minutes).
public enum WakeSettings {
    /// The longest floor accepted: one day.
    static let maximumSeconds: Int64 = 86_400

    /// The minimum interval, in seconds.
    public static func load(environment: [String: String]) throws(ConfigurationError) -> TimeInterval {
        var reader = EnvironmentReader(environment)
        let seconds = reader.choice(
            .wakeMinInterval,
            default: Int64(1_200),
            { text in DurationText.seconds(text).flatMap { $0 <= maximumSeconds ? $0 : nil } },
            allowed: "a duration from 0s to 1d, such as 20m, 1h or 90s"
        )
        try reader.validate()
        return TimeInterval(seconds)
    }
}
