public import ClientTokens
import Foundation
public import HTTPRouting
public import HeraldCore
import HeraldFeature
import Synchronization

/// Checks the client token of requests under `/v1/client` (API keys are not accepted there) and,
/// through ``APIKeyOrClientToken``, of the few routes outside it that a user may call too.
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
    /// Tokens verified lately: an app sends the same token with every request.
    private let verified = VerifiedTokens()

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
            let now = clock.now()
            if let claims = verified.claims(of: token, at: now) { return claims }
            let claims = try verifier.verify(token, now: now)
            verified.remember(token, claims, at: now)
            return claims
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

/// The claims of tokens verified in the last minute, by the token's exact text: the same bytes
/// carry the same signature, so a token seen again is not checked again until a minute passed or
/// its `exp` came, whichever is first (then the verifier decides again, with its clock skew). At
/// most ``capacity`` tokens; when full, it starts over. A refused token is never remembered.
final class VerifiedTokens: Sendable {
    static let capacity = 4_096
    static let lifetime: TimeInterval = 60

    private let entries = Mutex<[String: (claims: ClientTokenClaims, until: Date)]>([:])

    func claims(of token: String, at now: Date) -> ClientTokenClaims? {
        entries.withLock { entries in
            guard let entry = entries[token] else { return nil }
            guard now < entry.until else {
                entries[token] = nil
                return nil
            }
            return entry.claims
        }
    }

    func remember(_ token: String, _ claims: ClientTokenClaims, at now: Date) {
        // Not valid yet at some later time it would be read: only tokens valid from now on.
        if let notBefore = claims.notBefore, notBefore > now { return }
        let until = min(claims.expiresAt, now.addingTimeInterval(Self.lifetime))
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[token] = (claims, until)
        }
    }
}
