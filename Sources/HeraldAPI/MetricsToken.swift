public import HTTPRouting
public import HeraldCore
import HeraldCrypto

/// The bearer token `GET /metrics` requires when `HERALD_METRICS_TOKEN` is set, checked in
/// constant time.
///
/// `/metrics` names routes, apps, error causes and queue depths: what an operator's scraper needs
/// and a stranger should not read. The presented token and the configured one are both hashed
/// with SHA-256 and the digests compared over their full length, so the time taken reveals neither
/// how much of a guess was right nor the token's length. The token never appears in logs, errors
/// or ``description``.
public struct MetricsToken: Sendable, CustomStringConvertible {
    private let digest: [UInt8]

    public init(_ token: String) {
        digest = SHA256.hash(Array(token.utf8))
    }

    /// Reads `HERALD_METRICS_TOKEN`: nil when unset (`/metrics` stays open).
    ///
    /// - Throws: ``HeraldCore/ConfigurationError`` when the token is too short, too long or holds
    ///   spaces or control characters (never the token itself).
    public static func load(environment: [String: String]) throws(ConfigurationError) -> MetricsToken? {
        guard let token = EnvironmentReader(environment).string(.metricsToken) else { return nil }
        let printable = token.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F }
        guard APIKeys.allowedLengths.contains(token.count), printable else {
            throw ConfigurationError(problems: [
                "HERALD_METRICS_TOKEN is not usable: use \(Setting.metricsToken.accepted), or leave it unset "
                    + "to serve /metrics to anyone"
            ])
        }
        return MetricsToken(token)
    }

    /// Checks the request's bearer token.
    ///
    /// - Throws: ``HTTPRouting/HTTPError`` 401 `missing_metrics_token` or `invalid_metrics_token`,
    ///   saying what to send.
    public func authorize(_ request: HTTPRequest) throws(HTTPError) {
        guard let bearer = APIKeys.bearer(in: request) else {
            throw Self.unauthorized(
                "missing_metrics_token",
                "/metrics requires the metrics token: send Authorization: Bearer <HERALD_METRICS_TOKEN> "
                    + "(in Prometheus: authorization.credentials or credentials_file in the scrape job)"
            )
        }
        guard ConstantTime.equal(SHA256.hash(Array(bearer.utf8)), digest) else {
            throw Self.unauthorized(
                "invalid_metrics_token",
                "the bearer token is not HERALD_METRICS_TOKEN: send Authorization: Bearer <HERALD_METRICS_TOKEN> "
                    + "(an API key is not accepted here)"
            )
        }
    }

    private static func unauthorized(_ code: String, _ message: String) -> HTTPError {
        HTTPError(status: 401, code: code, message: message, headers: ["WWW-Authenticate": "Bearer"])
    }

    public var description: String { "MetricsToken(set)" }
}
