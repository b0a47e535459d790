import COpenSSL
import Glibc

/// One OpenSSL `SSL` object bound to a non-blocking socket. OpenSSL's WANT_READ/WANT_WRITE come
/// back as results, which the owning ``Channel`` turns into readiness waits.
///
/// Used by one channel on its loop thread only.
final class TLSConnection {
    enum HandshakeResult {
        case done, wantRead, wantWrite
        case failed(any Error)
    }

    enum IOResult {
        case bytes(Int)
        case wantRead, wantWrite
        case closed
        case failed(any Error)
    }

    let context: TLSContext
    private let ssl: OpaquePointer

    /// - Parameter serverName: client only: the name to send as SNI and to verify (or the IP
    ///   address to verify).
    init(context: TLSContext, fd: Int32, serverName: String?) throws(TLSError) {
        self.context = context
        guard let ssl = SSL_new(context.context) else {
            throw TLSError(code: .configuration, message: "SSL_new failed: \(OpenSSLErrors.drain())")
        }
        self.ssl = ssl
        guard SSL_set_fd(ssl, fd) == 1 else {
            throw TLSError(code: .configuration, message: "SSL_set_fd failed: \(OpenSSLErrors.drain())")
        }
        switch context.configuration.role {
        case .server:
            SSL_set_accept_state(ssl)
        case .client:
            SSL_set_connect_state(ssl)
            if let serverName, !serverName.isEmpty {
                try setPeerName(serverName)
            }
        }
    }

    deinit {
        SSL_free(ssl)
    }

    private func setPeerName(_ name: String) throws(TLSError) {
        if Self.isIPAddress(name) {
            // No SNI for IP addresses (RFC 6066); verify the address against the certificate.
            guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1 else {
                throw TLSError(code: .configuration, message: "cannot verify IP address \(name)")
            }
        } else {
            SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
            guard SSL_set1_host(ssl, name) == 1, copenssl_set_tlsext_host_name(ssl, name) == 1 else {
                throw TLSError(code: .configuration, message: "cannot set the TLS server name \(name)")
            }
        }
    }

    static func isIPAddress(_ name: String) -> Bool {
        var buffer = in6_addr()
        return inet_pton(AF_INET, name, &buffer) == 1 || inet_pton(AF_INET6, name, &buffer) == 1
    }

    /// The ALPN protocol the handshake selected, if any.
    var negotiatedProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// The protocol version the handshake agreed on (nil for one older than TLS 1.2, which the
    /// contexts never allow).
    var negotiatedVersion: TLSConfiguration.Version? {
        switch SSL_version(ssl) {
        case TLS1_3_VERSION: .tls13
        case TLS1_2_VERSION: .tls12
        default: nil
        }
    }

    /// The certificate the peer presented in the handshake, if any.
    var peerCertificate: TLSPeerCertificate? {
        guard let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(certificate) }
        return TLSPeerCertificate(certificate: certificate)
    }

    /// True when OpenSSL holds bytes read from the socket that have not been returned yet.
    var hasBufferedBytes: Bool { SSL_has_pending(ssl) == 1 }

    func handshake() -> HandshakeResult {
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        if result == 1 { return .done }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN:
            return .failed(ChannelError(code: .closedDuringHandshake, message: "peer closed the TLS handshake"))
        case SSL_ERROR_SYSCALL:
            let code = errno
            let reasons = OpenSSLErrors.drain()
            if code == 0 || reasons != "unknown error" {
                return .failed(
                    ChannelError(code: .closedDuringHandshake, message: "connection closed during the TLS handshake")
                )
            }
            return .failed(IOError(operation: "TLS handshake", errno: code))
        default:
            return .failed(handshakeError())
        }
    }

    private func handshakeError() -> TLSError {
        let reasons = OpenSSLErrors.drain()
        let verify = SSL_get_verify_result(ssl)
        if verify != X509_V_OK {
            let reason = String(cString: X509_verify_cert_error_string(verify))
            if verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH {
                return TLSError(
                    code: .hostnameMismatch,
                    message: "TLS certificate verification failed: \(reason) (the certificate is not for this host)"
                )
            }
            return TLSError(
                code: .certificateVerificationFailed,
                message: "TLS certificate verification failed: \(reason)"
            )
        }
        return TLSError(code: .handshakeFailed, message: "TLS handshake failed: \(reasons)")
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        ERR_clear_error()
        let count = SSL_read(ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        if count > 0 { return .bytes(Int(count)) }
        return ioResult(count, operation: "read")
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> IOResult {
        ERR_clear_error()
        let count = SSL_write(ssl, bytes.baseAddress, Int32(clamping: bytes.count))
        if count > 0 { return .bytes(Int(count)) }
        return ioResult(count, operation: "write")
    }

    private func ioResult(_ result: Int32, operation: String) -> IOResult {
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: return .closed
        case SSL_ERROR_SYSCALL:
            let code = errno
            _ = OpenSSLErrors.drain()
            if code == 0 || code == ECONNRESET || code == EPIPE { return .closed }
            return .failed(IOError(operation: "TLS \(operation)", errno: code))
        default:
            return .failed(TLSError(code: .protocolError, message: "TLS \(operation) failed: \(OpenSSLErrors.drain())"))
        }
    }

    /// Sends close_notify without waiting for the peer's (best effort, non-blocking).
    func shutdown() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }
}
