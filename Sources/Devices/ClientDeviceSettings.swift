public import HeraldCore

/// What a client token may do to its user's devices, for `herald serve`: `HERALD_CLIENT_MAX_DEVICES`
/// (active devices per user per app and environment, default 20; one more evicts the least
/// recently registered) and `HERALD_CLIENT_TAGS` (the tags a client may set, default none).
public struct ClientDeviceSettings: Sendable, Hashable {
    public var maximumDevicesPerUser: Int
    public var tags: ClientTagPolicy

    public init(
        maximumDevicesPerUser: Int = DeviceLimits.defaultMaximumDevicesPerUser,
        tags: ClientTagPolicy = .noTags
    ) {
        self.maximumDevicesPerUser = maximumDevicesPerUser
        self.tags = tags
    }

    public static func load(environment: [String: String]) throws(ConfigurationError) -> ClientDeviceSettings {
        var reader = EnvironmentReader(environment)
        var settings = ClientDeviceSettings()
        settings.maximumDevicesPerUser = reader.integer(.clientMaxDevices) ?? DeviceLimits.defaultMaximumDevicesPerUser
        if let text = reader.string(.clientTags) {
            do {
                settings.tags = try ClientTagPolicy.parse(text)
            } catch {
                reader.report(
                    "HERALD_CLIENT_TAGS is not valid: \(error.message) (use \(Setting.clientTags.example), "
                        + "or leave it unset: \(Setting.clientTags.defaultDescription))"
                )
            }
        }
        try reader.validate()
        return settings
    }
}
