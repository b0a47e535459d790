public import Foundation
public import HeraldCore

/// The Live Activities settings: how long a channel Herald created for an activity outlives the
/// activity (`HERALD_CHANNEL_RETENTION`, in seconds) and the per-user quotas
/// (`HERALD_MAX_INSTANCES_PER_USER`, and `HERALD_CLIENT_MAX_DEVICES` for push-to-start tokens).
public enum LiveActivitySettings {
    /// `HERALD_CHANNEL_RETENTION`, in seconds; default one hour.
    public static func load(environment: [String: String]) throws(ConfigurationError) -> TimeInterval {
        var reader = EnvironmentReader(environment)
        let seconds = reader.integer(.channelRetention) ?? 3_600
        try reader.validate()
        return TimeInterval(seconds)
    }

    /// `HERALD_LIVE_ACTIVITY_RETENTION_DAYS`: how long a finished activity is kept; default 30 days.
    public static func retention(environment: [String: String]) throws(ConfigurationError) -> TimeInterval {
        var reader = EnvironmentReader(environment)
        let days = reader.integer(.liveActivityRetentionDays) ?? 30
        try reader.validate()
        return TimeInterval(days) * 86_400
    }

    /// The per-user quotas: `HERALD_MAX_INSTANCES_PER_USER` (default 10) and
    /// `HERALD_CLIENT_MAX_DEVICES` push-to-start tokens (default 20).
    public static func quotas(environment: [String: String]) throws(ConfigurationError) -> LiveActivityQuotas {
        var reader = EnvironmentReader(environment)
        let instances = reader.integer(.maxInstancesPerUser) ?? 10
        let tokens = reader.integer(.clientMaxDevices) ?? 20
        try reader.validate()
        return LiveActivityQuotas(maximumInstancesPerUser: instances, maximumPushToStartTokensPerUser: tokens)
    }
}
