public import ClientTokens
public import HTTPRouting

extension ClientTokenError: DomainErrorResponse {
    /// 403 for a token of another app (`wrong_app`); 401 with a `WWW-Authenticate: Bearer`
    /// challenge for every other reason, `error="invalid_token"` when a token was sent but is
    /// not acceptable (RFC 6750 §3).
    public var httpError: HTTPError {
        if reason == .wrongApp {
            return HTTPError(status: 403, code: reason.rawValue, message: message)
        }
        let challenge = reason == .missing || reason == .notConfigured ? "Bearer" : #"Bearer error="invalid_token""#
        return HTTPError(status: 401, code: reason.rawValue, message: message, headers: ["WWW-Authenticate": challenge])
    }

    public var response: HTTPResponse { httpError.response }
}

extension HTTPRequest {
    /// The verified claims of the client token a `.clientToken` route was called with
    /// (``FeatureRoute/Authentication/clientToken``): the user is their `sub`.
    ///
    /// - Throws: 401 `missing` when the request reached the handler without them (a route not
    ///   declared `.clientToken`): a handler never acts for nobody.
    public func clientClaims() throws(ClientTokenError) -> ClientTokenClaims {
        guard let claims = principal as? ClientTokenClaims else {
            throw ClientTokenError(.missing, "send the client token as Authorization: Bearer <client token>")
        }
        return claims
    }
}
