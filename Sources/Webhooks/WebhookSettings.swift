public import HeraldCore

/// The webhooks' settings for `herald serve`: `HERALD_WEBHOOK_ALLOW_HTTP` (accept `http://`
/// URLs, default 0), `HERALD_WEBHOOK_ALLOW_PRIVATE` (deliver to non-public addresses, default 0)
/// and `HERALD_WEBHOOK_CA_FILE` (extra roots trusted for receivers).
public enum WebhookSettings {
    public static func load(environment: [String: String]) throws(ConfigurationError) -> WebhookConfiguration {
        var reader = EnvironmentReader(environment)
        var configuration = WebhookConfiguration()
        configuration.allowHTTP = reader.choice(
            .webhookAllowHTTP,
            default: false,
            { ["1": true, "0": false][$0] },
            allowed: "1, 0"
        )
        configuration.allowPrivate = reader.choice(
            .webhookAllowPrivate,
            default: false,
            { ["1": true, "0": false][$0] },
            allowed: "1, 0"
        )
        configuration.caFile = reader.string(.webhookCAFile)
        try reader.validate()
        return configuration
    }
}
