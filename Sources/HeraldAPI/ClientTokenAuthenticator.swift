public import ClientTokens
import Foundation
public import HTTPRouting
public import HeraldCore
import HeraldFeature

/// Checks the client token of requests under `/v1/client` (and only there: API keys are not
/// accepted there, and client tokens nowhere else).
///
/// The token comes as `Authorization: Bearer <jwt>`. A refusal is 401 with the reason as the error
/// code (`expired`, `bad_signature`, `wrong_audience`, …) and `WWW-Authenticate: Bearer
/// error="invalid_token"`, and is counted in `herald_client_token_rejections_total` by reason. The
/// token never reaches a log or an error message.
public struct ClientTokenAuthenticator: Sendable, CustomStringConvertible {
    public let verifier: ClientTokenVerifier
    /// The rate limits its ``admission`` applies; `nil`: none.
    public let limiter: ClientRateLimiter?
    private let clock: any HeraldClock
    private let rejections: Counter

    /// The path prefix the authenticator guards.
    public static let prefix = "/v1/client"

    /// - Parameters:
    ///   - clock: `exp`, `nbf` and `iat` are compared with its time of day; tests inject one.
    ///   - metrics: where rejections are counted.
    ///   - limiter: the per-address and per-user rate limits of ``admission``.
    public init(
        _ configuration: ClientTokenConfiguration,
        clock: any HeraldClock = SystemClock(),
        metrics: MetricsRegistry = .shared,
        limiter: ClientRateLimiter? = nil
    ) {
        self.verifier = ClientTokenVerifier(configuration)
        self.limiter = limiter
        self.clock = clock
        self.rejections = metrics.counter(
            "herald_client_token_rejections_total",
            help: "Requests to /v1/client refused for their client token, by reason."
        )
    }

    /// The claims of the request's verified client token.
    ///
    /// - Throws: ``HTTPRouting/HTTPError`` 401 naming the reason.
    public func verify(_ request: HTTPRequest) throws(HTTPError) -> ClientTokenClaims {
        do throws(ClientTokenError) {
            guard let token = Self.bearer(in: request) else {
                if request.headers["Authorization"] != nil {
                    throw ClientTokenError(
                        .missing,
                        "the Authorization header is not a bearer token: send Authorization: Bearer <client token>"
                    )
                }
                throw ClientTokenError(.missing, "send the client token as Authorization: Bearer <client token>")
            }
            return try verifier.verify(token, now: clock.now())
        } catch {
            rejections.increment(labels: [("reason", error.reason.rawValue)])
            throw error.httpError
        }
    }

    /// ``verify(_:)`` as a router admission check: a request without a valid token is
    /// refused on its headers, before the server reads its body. With a ``limiter``, the client's
    /// address is counted first (a flood is refused before any signature is checked) and the
    /// token's user after; each request is counted once, when the server admits it.
    public var admission: Router.AdmissionCheck {
        { request in
            if let refusal = limiter?.checkAddress(request) { return refusal }
            do throws(HTTPError) {
                let claims = try verify(request)
                // The handler reads them (`request.clientClaims()`) instead of verifying again.
                request.principal = claims
                return limiter?.checkUser(claims)
            } catch {
                return error.response
            }
        }
    }

    static func bearer(in request: HTTPRequest) -> String? {
        guard let header = request.headers["Authorization"] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        // Spaces and tabs around it, trimmed on the UTF-8 view (Foundation's trimming bridges
        // through NSString on every request).
        let isBlank = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        let utf8 = parts[1].utf8
        guard let first = utf8.firstIndex(where: { !isBlank($0) }), let last = utf8.lastIndex(where: { !isBlank($0) })
        else { return nil }
        return String(parts[1][first...last])
    }

    public var description: String { "ClientTokenAuthenticator(\(verifier.configuration))" }
}
