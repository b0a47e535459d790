/// How a ``TLSContext`` is set up: TLS versions (1.2 or newer by default), ALPN, trust roots and certificates.
///
/// ```swift
/// var client = TLSConfiguration.makeClient()
/// client.additionalTrustRootsFile = environment["APNS_CA_FILE"]   // added to the system roots
/// let context = try TLSContext(configuration: client)
///
/// let server = TLSConfiguration.makeServer(certificateChainPEM: chain, privateKeyPEM: key)
/// ```
public struct TLSConfiguration: Sendable {
    /// Which side of the handshake the context is for.
    public enum Role: Sendable, Hashable {
        case client, server
    }

    /// A TLS protocol version.
    public enum Version: Sendable, Hashable {
        case tls12, tls13
    }

    /// How the peer's certificate is checked.
    public enum CertificateVerification: Sendable, Hashable {
        /// Client: not offered (a client always verifies). Server: no client certificate is asked for.
        case none
        /// Client: the server's chain must lead to a trusted root and match the host name (or IP
        /// address). Server: the client must present a certificate that leads to a trusted root.
        case full
        /// Server only: a client certificate is asked for and any is taken, or none, whoever issued
        /// it; the handler reads it from ``Channel/peerCertificate`` and judges it itself. For test
        /// servers such as the APNs simulator, never for a server that trusts what it is shown.
        case requestClientCertificate
    }

    public var role: Role
    /// Default ``Version/tls12``.
    public var minimumVersion: Version = .tls12
    /// The highest TLS version offered or accepted; nil (the default) for the newest OpenSSL
    /// supports. Set it only to test that a peer refuses an old version.
    public var maximumVersion: Version?
    /// ALPN protocols in order of preference; default `["h2"]`. A client fails the handshake with
    /// ``TLSError/Code/applicationProtocolNotNegotiated`` when the server selects none of them; a
    /// server answers without ALPN when the client offers none of them.
    public var applicationProtocols: [String] = ["h2"]
    /// Client default ``CertificateVerification/full`` (and a client never skips it); server
    /// default ``CertificateVerification/none``.
    public var certificateVerification: CertificateVerification
    /// Trust the operating system's root certificates (OpenSSL's default paths). Default true.
    public var trustSystemRoots = true
    /// A PEM file of extra trusted roots, added to (not replacing) the system roots:
    /// `APNS_CA_FILE` semantics.
    public var additionalTrustRootsFile: String?
    /// Extra trusted roots as PEM text, added like ``additionalTrustRootsFile``.
    public var additionalTrustRootsPEM: String?
    /// The certificate, then its intermediates, as PEM. Required for a server; for a client, the
    /// certificate for certificate-based (mTLS) authentication.
    public var certificateChainPEM: String?
    /// The private key of ``certificateChainPEM`` as PEM (PKCS#8 or traditional).
    public var privateKeyPEM: String?
    /// Client only: the name sent as SNI and verified against the certificate instead of the
    /// host connected to (an IP address is verified as an IP address and sent without SNI).
    public var serverNameOverride: String?

    /// A client configuration with full verification against the system roots and ALPN `h2`.
    public static func makeClient() -> TLSConfiguration {
        TLSConfiguration(role: .client, certificateVerification: .full)
    }

    /// A server configuration presenting `certificateChainPEM` and offering ALPN `h2`.
    public static func makeServer(certificateChainPEM: String, privateKeyPEM: String) -> TLSConfiguration {
        var configuration = TLSConfiguration(role: .server, certificateVerification: .none)
        configuration.certificateChainPEM = certificateChainPEM
        configuration.privateKeyPEM = privateKeyPEM
        return configuration
    }

    private init(role: Role, certificateVerification: CertificateVerification) {
        self.role = role
        self.certificateVerification = certificateVerification
    }
}
