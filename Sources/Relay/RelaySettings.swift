public import HeraldCore

/// The relay's settings: whether `herald serve` mounts it (HERALD_RELAY), its send budget
/// (HERALD_RELAY_MAX_IN_FLIGHT) and its per-address limit (HERALD_RELAY_IP_RATE_LIMIT).
public struct RelaySettings: Sendable, Hashable {
    /// Whether `herald serve` mounts `/push/…`; `herald relay` always does.
    public var enabled = false
    /// The most relayed pushes waiting for APNs at once, in a budget of their own.
    public var maximumInFlight = 1_024
    /// Requests per client address; `nil`: no limit.
    public var addressRateLimit: RateLimit?

    public init() {}

    /// - Throws: ``HeraldCore/ConfigurationError`` naming the variable and what to write.
    public static func load(environment: [String: String]) throws(ConfigurationError) -> RelaySettings {
        var reader = EnvironmentReader(environment)
        var settings = RelaySettings()
        settings.enabled = reader.choice(
            .relay,
            default: false,
            { ["1": true, "0": false][$0] },
            allowed: "1 (mount the relay in herald serve) or 0"
        )
        settings.maximumInFlight = reader.integer(.relayMaxInFlight) ?? settings.maximumInFlight
        settings.addressRateLimit = reader.rateLimit(.relayIPRateLimit)
        try reader.validate()
        return settings
    }
}
