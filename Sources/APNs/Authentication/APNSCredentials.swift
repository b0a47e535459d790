/// How Herald authenticates to APNs for one app: a provider-token key (works for every push type
/// and both environments) or a TLS client certificate (one app; a subset of push types).
///
/// ``description`` never shows key material.
public enum APNSCredentials: Sendable, CustomStringConvertible, CustomReflectable {
    /// Token-based: each request carries a JWT signed with the `.p8` key.
    case token(APNSSigningKey)
    /// Certificate-based (mutual TLS): the client certificate and its private key, PEM. The TLS
    /// connection presents them; requests carry no `authorization`.
    case certificate(certificatePEM: String, keyPEM: String)

    /// The signing key for token-based credentials.
    public var signingKey: APNSSigningKey? {
        if case .token(let key) = self { return key }
        return nil
    }

    public var description: String {
        switch self {
        case .token(let key): "token(keyID: \(key.keyID), teamID: \(key.teamID))"
        case .certificate: "certificate(<redacted>)"
        }
    }

    public var customMirror: Mirror {
        Mirror(self, children: ["credentials": description])
    }
}
