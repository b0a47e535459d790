/// Herald's version, as `herald --version`, the start-up line, webhooks' `User-Agent` and the API
/// description (`GET /v1/openapi.json`) give it.
public enum HeraldVersion {
    public static let string = "0.1.0"
}
