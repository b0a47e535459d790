public import HeraldCore
public import LiveActivities

extension LiveActivitySettings {
    /// What one user may hold: `HERALD_MAX_INSTANCES_PER_USER` instances of one activity (default
    /// 10) and `HERALD_CLIENT_MAX_DEVICES` push-to-start tokens per app and environment (default
    /// 20, the same bound as active devices).
    public static func quotas(environment: [String: String]) throws(ConfigurationError) -> LiveActivityQuotas {
        var reader = EnvironmentReader(environment)
        let instances = reader.integer(.maxInstancesPerUser) ?? 10
        let tokens = reader.integer(.clientMaxDevices) ?? 20
        try reader.validate()
        return LiveActivityQuotas(maximumInstancesPerUser: instances, maximumPushToStartTokensPerUser: tokens)
    }
}
