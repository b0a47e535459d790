public import Foundation
public import HeraldCore

/// The device registry's settings for `herald serve`: `HERALD_INVALID_DEVICE_RETENTION_DAYS` (how
/// long an invalid device is kept, default 30 days).
public enum DeviceSettings {
    /// The retention of invalid devices, in seconds.
    public static func load(environment: [String: String]) throws(ConfigurationError) -> TimeInterval {
        var reader = EnvironmentReader(environment)
        let days = reader.integer(.invalidDeviceRetentionDays) ?? 30
        try reader.validate()
        return TimeInterval(days) * 86_400
    }
}
