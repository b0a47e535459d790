import COpenSSL

/// An OpenSSL `SSL_CTX` built from a ``TLSConfiguration``: create one per configuration and share
/// it between connections (it holds the loaded trust store and certificates).
///
/// `@unchecked Sendable`: the `SSL_CTX` and the ALPN bytes are configured in `init` and never
/// changed afterwards; OpenSSL allows creating `SSL` objects from one context on several threads.
public final class TLSContext: @unchecked Sendable {
    /// The configuration the context was built from.
    public let configuration: TLSConfiguration
    let context: OpaquePointer
    /// ALPN protocols in wire format (length-prefixed), owned by this object.
    private let alpnWire: UnsafeMutableBufferPointer<UInt8>

    /// Builds the context.
    /// - Throws: ``TLSError`` with code ``TLSError/Code/configuration`` when a file or PEM cannot
    ///   be loaded or the key does not match the certificate.
    public init(configuration: TLSConfiguration) throws {
        self.configuration = configuration
        let method = configuration.role == .client ? TLS_client_method() : TLS_server_method()
        guard let context = SSL_CTX_new(method) else {
            throw TLSError(code: .configuration, message: "SSL_CTX_new failed: \(OpenSSLErrors.drain())")
        }
        self.context = context
        let wire = configuration.applicationProtocols.flatMap { protocolName -> [UInt8] in
            let bytes = Array(protocolName.utf8.prefix(255))
            return [UInt8(bytes.count)] + bytes
        }
        alpnWire = .allocate(capacity: max(wire.count, 1))
        _ = alpnWire.initialize(from: wire)
        let alpnCount = wire.count
        try configure(alpnCount: alpnCount)
    }

    deinit {
        SSL_CTX_free(context)
        alpnWire.deallocate()
    }

    private func configure(alpnCount: Int) throws {
        let version = configuration.minimumVersion == .tls13 ? TLS1_3_VERSION : TLS1_2_VERSION
        guard copenssl_ctx_set_min_proto_version(context, version) == 1 else {
            throw TLSError(code: .configuration, message: "cannot set the minimum TLS version")
        }
        if let maximum = configuration.maximumVersion {
            let version = maximum == .tls13 ? TLS1_3_VERSION : TLS1_2_VERSION
            guard copenssl_ctx_set_max_proto_version(context, version) == 1 else {
                throw TLSError(code: .configuration, message: "cannot set the maximum TLS version")
            }
        }
        _ = SSL_CTX_set_options(context, copenssl_default_options())
        _ = copenssl_ctx_set_mode(
            context,
            Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER)
        )
        // Fewer read(2) calls: OpenSSL reads as much as is available into a 64 KiB buffer.
        copenssl_ctx_set_read_ahead(context, 1)
        SSL_CTX_set_default_read_buffer_len(context, 64 * 1024)

        try loadTrustRoots()
        try loadCertificateAndKey()

        switch configuration.role {
        case .client:
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            if alpnCount > 0, SSL_CTX_set_alpn_protos(context, alpnWire.baseAddress, UInt32(alpnCount)) != 0 {
                throw TLSError(code: .configuration, message: "cannot set ALPN protocols: \(OpenSSLErrors.drain())")
            }
        case .server:
            switch configuration.certificateVerification {
            case .full:
                SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
            case .requestClientCertificate:
                // Ask for a certificate; whatever the chain check finds, the handshake goes on.
                SSL_CTX_set_verify(context, SSL_VERIFY_PEER) { _, _ in 1 }
            case .none:
                SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
            }
            if alpnCount > 0 {
                SSL_CTX_set_alpn_select_cb(
                    context,
                    selectApplicationProtocol,
                    Unmanaged.passUnretained(self).toOpaque()
                )
            }
        }
    }

    private func loadTrustRoots() throws {
        let verifies = configuration.role == .client || configuration.certificateVerification == .full
        guard verifies else { return }
        if configuration.trustSystemRoots, SSL_CTX_set_default_verify_paths(context) != 1 {
            throw TLSError(
                code: .configuration,
                message: "cannot load the system trust roots: \(OpenSSLErrors.drain())"
            )
        }
        if let file = configuration.additionalTrustRootsFile {
            guard SSL_CTX_load_verify_locations(context, file, nil) == 1 else {
                throw TLSError(
                    code: .configuration,
                    message: "cannot load trusted roots from \(file): \(OpenSSLErrors.drain())"
                )
            }
        }
        if let pem = configuration.additionalTrustRootsPEM {
            let certificates = try PEM.certificates(pem, what: "additional trust roots")
            let store = SSL_CTX_get_cert_store(context)
            for certificate in certificates {
                defer { X509_free(certificate) }
                guard X509_STORE_add_cert(store, certificate) == 1 else {
                    throw TLSError(code: .configuration, message: "cannot add a trust root: \(OpenSSLErrors.drain())")
                }
            }
        }
    }

    private func loadCertificateAndKey() throws {
        guard let chainPEM = configuration.certificateChainPEM else {
            if configuration.role == .server {
                throw TLSError(
                    code: .configuration,
                    message: "a TLS server needs certificateChainPEM and privateKeyPEM"
                )
            }
            return
        }
        guard let keyPEM = configuration.privateKeyPEM else {
            throw TLSError(code: .configuration, message: "certificateChainPEM is set but privateKeyPEM is not")
        }
        let certificates = try PEM.certificates(chainPEM, what: "certificate chain")
        var remaining = certificates[...]
        defer { remaining.forEach { X509_free($0) } }
        let leaf = remaining.removeFirst()
        defer { X509_free(leaf) }
        guard SSL_CTX_use_certificate(context, leaf) == 1 else {
            throw TLSError(code: .configuration, message: "cannot use the certificate: \(OpenSSLErrors.drain())")
        }
        while let intermediate = remaining.first {
            guard copenssl_ctx_add0_chain_cert(context, intermediate) == 1 else {
                throw TLSError(
                    code: .configuration,
                    message: "cannot add a chain certificate: \(OpenSSLErrors.drain())"
                )
            }
            remaining.removeFirst()  // now owned by the context
        }
        let key = try PEM.privateKey(keyPEM)
        defer { EVP_PKEY_free(key) }
        guard SSL_CTX_use_PrivateKey(context, key) == 1, SSL_CTX_check_private_key(context) == 1 else {
            throw TLSError(
                code: .configuration,
                message: "the private key does not match the certificate: \(OpenSSLErrors.drain())"
            )
        }
    }

    /// The server's ALPN choice: the first of our protocols the client offers, or no ALPN.
    fileprivate func select(
        _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
        _ outLength: UnsafeMutablePointer<UInt8>?,
        offered: UnsafePointer<UInt8>?,
        offeredLength: UInt32
    ) -> Int32 {
        guard let out, let outLength, let offered, let ours = alpnWire.baseAddress else { return SSL_TLSEXT_ERR_NOACK }
        let oursCount = configuration.applicationProtocols.reduce(0) { $0 + 1 + min($1.utf8.count, 255) }
        var selected: UnsafeMutablePointer<UInt8>?
        let result = SSL_select_next_proto(&selected, outLength, ours, UInt32(oursCount), offered, offeredLength)
        guard result == OPENSSL_NPN_NEGOTIATED, let selected else { return SSL_TLSEXT_ERR_NOACK }
        out.pointee = UnsafePointer(selected)
        return SSL_TLSEXT_ERR_OK
    }
}

/// OpenSSL's ALPN selection callback; `argument` is the unretained ``TLSContext``, which outlives
/// its `SSL_CTX`.
private func selectApplicationProtocol(
    _ ssl: OpaquePointer?,
    _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
    _ outLength: UnsafeMutablePointer<UInt8>?,
    _ offered: UnsafePointer<UInt8>?,
    _ offeredLength: UInt32,
    _ argument: UnsafeMutableRawPointer?
) -> Int32 {
    guard let argument else { return SSL_TLSEXT_ERR_NOACK }
    let context = Unmanaged<TLSContext>.fromOpaque(argument).takeUnretainedValue()
    return context.select(out, outLength, offered: offered, offeredLength: offeredLength)
}

/// Reading PEM text with OpenSSL.
enum PEM {
    /// Every certificate in `pem`, in order; the caller frees them. Throws when there is none.
    static func certificates(_ pem: String, what: String) throws -> [OpaquePointer] {
        try withBIO(pem) { bio in
            var certificates: [OpaquePointer] = []
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) {
                certificates.append(certificate)
            }
            ERR_clear_error()  // the end of the text shows up as a "no start line" error
            guard !certificates.isEmpty else {
                throw TLSError(code: .configuration, message: "the \(what) contains no PEM certificate")
            }
            return certificates
        }
    }

    /// The private key in `pem`; the caller frees it.
    static func privateKey(_ pem: String) throws -> OpaquePointer {
        try withBIO(pem) { bio in
            guard let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else {
                throw TLSError(
                    code: .configuration,
                    message: "the private key is not valid PEM: \(OpenSSLErrors.drain())"
                )
            }
            return key
        }
    }

    private static func withBIO<T>(_ pem: String, _ body: (OpaquePointer) throws -> T) throws -> T {
        let bytes = Array(pem.utf8)
        return try bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else {
                throw TLSError(code: .configuration, message: "BIO_new_mem_buf failed")
            }
            defer { BIO_free(bio) }
            return try body(bio)
        }
    }
}

/// OpenSSL's thread-local error queue.
enum OpenSSLErrors {
    /// Empties the queue and returns its reasons joined by "; " (or "unknown error").
    static func drain() -> String {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if let reason = ERR_reason_error_string(code) {
                reasons.append(String(cString: reason))
            } else {
                var buffer = [CChar](repeating: 0, count: 256)
                ERR_error_string_n(code, &buffer, buffer.count)
                reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
        }
        return reasons.isEmpty ? "unknown error" : reasons.joined(separator: "; ")
    }
}
