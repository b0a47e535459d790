public import APNs
public import HeraldIO

/// The TLS side of a connection to APNs: extra trusted roots and, for certificate-based
/// authentication, the client certificate.
///
/// ```swift
/// let tls = APNSTLSConfiguration(caFile: environment["APNS_CA_FILE"], credentials: credentials)
/// let pool = APNSConnectionPool(endpoint: endpoint, tls: tls, logger: logger)
/// ```
///
/// ``description`` never shows the key.
public struct APNSTLSConfiguration: Sendable, CustomStringConvertible {
    /// `APNS_CA_FILE`: a PEM file of root certificates trusted in addition to the system store
    /// (the simulator's certificate, or a corporate proxy's root).
    public var caFile: String?
    /// The client certificate (then any intermediates), PEM, for certificate-based (mutual TLS)
    /// authentication; `nil` for token-based authentication.
    public var clientCertificatePEM: String?
    /// The private key of ``clientCertificatePEM``, PEM.
    public var clientKeyPEM: String?

    /// - Parameters:
    ///   - caFile: extra trusted roots, added to the system store.
    ///   - credentials: ``APNSCredentials/certificate(certificatePEM:keyPEM:)`` fills the client
    ///     certificate and key; token credentials leave them `nil` (the token travels in each
    ///     request's `authorization` header instead).
    public init(caFile: String? = nil, credentials: APNSCredentials) {
        self.caFile = caFile
        switch credentials {
        case .certificate(let certificatePEM, let keyPEM):
            self.clientCertificatePEM = certificatePEM
            self.clientKeyPEM = keyPEM
        case .token:
            self.clientCertificatePEM = nil
            self.clientKeyPEM = nil
        }
    }

    /// The HeraldIO client configuration: full verification against the system roots plus
    /// ``caFile``, ALPN `h2`, TLS 1.2 or newer, and the client certificate when set.
    public func makeTLSConfiguration() -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClient()
        configuration.additionalTrustRootsFile = caFile
        configuration.certificateChainPEM = clientCertificatePEM
        configuration.privateKeyPEM = clientKeyPEM
        return configuration
    }

    public var description: String {
        let certificate = clientCertificatePEM == nil ? "none" : "<redacted>"
        return "APNSTLSConfiguration(caFile: \(caFile ?? "none"), clientCertificate: \(certificate))"
    }
}
