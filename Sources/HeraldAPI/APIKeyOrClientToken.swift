public import HTTPRouting
public import HeraldFeature

/// The credential of a route that the app's backend and a user's app may both call
/// (``HeraldFeature/FeatureRoute/Authentication/apiKeyOrClientToken``): a poll's early finalize,
/// by the backend or by the poll's host.
///
/// The bearer is tried as an API key first, in constant time over every configured key. A bearer
/// that is not a key but is shaped as a JWT (three dot-separated parts) is checked as a client
/// token, with the client limits and refusals; anything else is refused as a wrong API key. A
/// request admitted by its client token carries the claims as
/// ``HTTPRouting/HTTPRequest/principal``; one admitted by its key carries none.
public struct APIKeyOrClientToken: RequestAuthenticator, CustomStringConvertible {
    public let apiKeys: APIKeys
    public let clientTokens: ClientTokenAuthenticator

    public init(apiKeys: APIKeys, clientTokens: ClientTokenAuthenticator) {
        self.apiKeys = apiKeys
        self.clientTokens = clientTokens
    }

    public var admission: Router.AdmissionCheck {
        let keys = apiKeys.admission
        let tokens = clientTokens.admission
        return { request in
            guard let keyRefusal = keys(&request) else { return nil }
            guard let bearer = ClientTokenAuthenticator.bearer(in: request), Self.isJWTShaped(bearer) else {
                return keyRefusal
            }
            return tokens(&request)
        }
    }

    /// Three non-empty parts separated by two dots, as every compact JWS is (RFC 7515 §7.1).
    static func isJWTShaped(_ text: String) -> Bool {
        var dots = 0
        var partLength = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: ".") {
                guard partLength > 0 else { return false }
                dots += 1
                partLength = 0
            } else {
                partLength += 1
            }
        }
        return dots == 2 && partLength > 0
    }

    public var description: String { "APIKeyOrClientToken(\(apiKeys), \(clientTokens))" }
}
