public import HeraldCore

/// The webhooks' settings for `herald serve`: `HERALD_WEBHOOK_ALLOW_HTTP` (accept `http://`
/// URLs, default 0), `HERALD_WEBHOOK_ALLOW_PRIVATE` (deliver to non-public addresses, default 0)
/// and `HERALD_WEBHOOK_CA_FILE` (extra roots trusted for receivers).
public enum WebhookSettings {
    public static func load(environment: [String: String]) throws(ConfigurationError) -> WebhookConfiguration {
        var reader = EnvironmentReader(environment)
        var configuration = WebhookConfiguration()
        configuration.allowHTTP = reader.flag(.webhookAllowHTTP, default: false)
        configuration.allowPrivate = reader.flag(.webhookAllowPrivate, default: false)
        configuration.caFile = reader.string(.webhookCAFile)
        try reader.validate()
        return configuration
    }
}
