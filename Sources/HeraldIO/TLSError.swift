/// A TLS context could not be built, or a handshake or TLS record failed.
public struct TLSError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case configuration, certificateVerificationFailed, hostnameMismatch
            case applicationProtocolNotNegotiated, handshakeFailed, protocolError
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The configuration is unusable: an unreadable CA file, a bad PEM, a key not matching
        /// the certificate.
        public static let configuration = Code(.configuration)
        /// The peer's certificate chain does not lead to a trusted root, or is expired, or similar.
        public static let certificateVerificationFailed = Code(.certificateVerificationFailed)
        /// The certificate is valid but not for the host name or IP address connected to.
        public static let hostnameMismatch = Code(.hostnameMismatch)
        /// The server did not select one of the client's ALPN protocols (for Herald: `h2`).
        public static let applicationProtocolNotNegotiated = Code(.applicationProtocolNotNegotiated)
        /// The handshake failed for another reason (alert from the peer, no shared cipher…).
        public static let handshakeFailed = Code(.handshakeFailed)
        /// A TLS record could not be read or written after the handshake.
        public static let protocolError = Code(.protocolError)

        public var description: String {
            switch base {
            case .configuration: "TLS configuration"
            case .certificateVerificationFailed: "certificate verification failed"
            case .hostnameMismatch: "host name mismatch"
            case .applicationProtocolNotNegotiated: "ALPN protocol not negotiated"
            case .handshakeFailed: "TLS handshake failed"
            case .protocolError: "TLS protocol error"
            }
        }
    }

    public let code: Code
    /// A sentence with OpenSSL's reason.
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
