import COpenSSL

/// A private key on the NIST P-256 curve, for ES256 signatures (APNs provider tokens, VAPID) and
/// ECDH key agreement (WebPush message encryption).
///
/// ```swift
/// let key = try P256PrivateKey(pemRepresentation: contentsOfP8File)
/// let signature = try key.signature(for: Array(signingInput.utf8))
/// let jwtSignature = Base64URL.encode(signature.rawRepresentation)
/// ```
///
/// The key lives in OpenSSL; its ``description`` never shows it.
public struct P256PrivateKey: Sendable, CustomStringConvertible {
    let key: EVPKey
    /// The matching public key.
    public let publicKey: P256PublicKey

    /// Generates a new random key.
    public init() {
        var generated: OpaquePointer? = nil
        if let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) {
            defer { EVP_PKEY_CTX_free(context) }
            if EVP_PKEY_keygen_init(context) == 1,
                EVP_PKEY_CTX_set_group_name(context, EVPKey.p256GroupName) == 1
            {
                _ = EVP_PKEY_generate(context, &generated)
            }
        }
        guard let generated else {
            fatalError("OpenSSL could not generate a P-256 key: \(OpenSSLErrorQueue.drain() ?? "no reason given")")
        }
        do {
            try self.init(checked: EVPKey(takingOwnershipOf: generated), "generated key")
        } catch {
            fatalError("OpenSSL generated an unusable P-256 key: \(error)")
        }
    }

    /// Reads a private key from PEM text: PKCS#8 (`-----BEGIN PRIVATE KEY-----`, as in Apple's
    /// `.p8` files) or SEC1 (`-----BEGIN EC PRIVATE KEY-----`). Indentation, CRLF line ends, blank
    /// lines and, in one-line text, `\n` escapes for line breaks are tolerated.
    ///
    /// - Throws: ``CryptoError`` with code `.invalidKey` for text that holds no readable private
    ///   key, and `.unsupportedKey` for an encrypted key or a key that is not on P-256.
    public init(pemRepresentation: String) throws {
        if pemRepresentation.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----")
            || pemRepresentation.contains("Proc-Type: 4,ENCRYPTED")
        {
            throw CryptoError(
                .unsupportedKey,
                "The PEM private key is encrypted; decrypt it first (openssl pkey -in key.pem -out plain.pem)."
            )
        }
        guard pemRepresentation.contains("-----BEGIN ") else {
            throw CryptoError(
                .invalidKey,
                "The text holds no PEM block; expected -----BEGIN PRIVATE KEY----- or -----BEGIN EC PRIVATE KEY-----."
            )
        }
        let key: OpaquePointer? = try MemoryBIO.reading(PEMText.normalized(pemRepresentation)) { bio in
            // A password callback that refuses, so OpenSSL never prompts on the terminal.
            PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in -1 }, nil)
        }
        guard let key else {
            throw CryptoError.openSSL(
                .invalidKey,
                "The PEM text holds no readable private key; expected -----BEGIN PRIVATE KEY----- (PKCS#8) "
                    + "or -----BEGIN EC PRIVATE KEY----- (SEC1)."
            )
        }
        // OpenSSL's decoders may leave notes from the formats they tried; the read succeeded.
        OpenSSLErrorQueue.clear()
        try self.init(checked: EVPKey(takingOwnershipOf: key), "PEM private key")
    }

    /// Makes a key from its 32-byte big-endian private scalar, as test vectors (RFC 8291) and JWKs
    /// (`d`) give it.
    ///
    /// - Throws: ``CryptoError`` with code `.invalidKey` unless the bytes are 32 long and the
    ///   scalar lies between 1 and the order of the curve.
    public init(rawRepresentation: [UInt8]) throws {
        guard rawRepresentation.count == EVPKey.p256ScalarByteCount else {
            throw CryptoError(
                .invalidKey,
                "A raw P-256 private key is 32 bytes; got \(rawRepresentation.count)."
            )
        }
        let publicPoint = try Self.publicPoint(forScalar: rawRepresentation)
        let key = try EVPKey.makeP256(publicPoint: publicPoint, privateScalar: rawRepresentation)
        try self.init(checked: key, "raw private key")
    }

    private init(checked key: EVPKey, _ what: String) throws {
        try key.requireP256(what)
        self.key = key
        self.publicKey = try P256PublicKey(x963Representation: key.p256PublicPoint())
    }

    /// The 32-byte big-endian private scalar. Handle with care: this is the secret.
    public var rawRepresentation: [UInt8] {
        do {
            return try key.p256PrivateScalar()
        } catch {
            fatalError("OpenSSL could not export a P-256 private key it holds: \(error)")
        }
    }

    /// The key as PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`). Handle with care: this is the secret.
    public var pemRepresentation: String {
        do {
            return try key.withUnsafePointer { key in
                try MemoryBIO.writing("private key PEM") { bio in
                    PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil)
                }
            }
        } catch {
            fatalError("OpenSSL could not write a P-256 private key it holds: \(error)")
        }
    }

    public var description: String {
        "P256PrivateKey(publicKey: \(Base64URL.encode(publicKey.x963Representation)))"
    }

    /// Signs `message` with ECDSA over P-256 and SHA-256 (JOSE "ES256"). The signature is
    /// randomized: signing the same message twice gives different, equally valid signatures.
    public func signature(for message: [UInt8]) throws -> ECDSASignature {
        guard let context = EVP_MD_CTX_new() else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not allocate a digest context.")
        }
        defer { EVP_MD_CTX_free(context) }
        let der: [UInt8] = try key.withUnsafePointer { key in
            guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
                throw CryptoError.openSSL(.internalFailure, "OpenSSL could not start an ES256 signature.")
            }
            var length = 0
            guard EVP_DigestSign(context, nil, &length, nil, 0) == 1, length > 0 else {
                throw CryptoError.openSSL(.internalFailure, "OpenSSL could not size an ES256 signature.")
            }
            var der = [UInt8](repeating: 0, count: length)
            let signed = message.withNonNullBytes { message, messageCount in
                der.withUnsafeMutableBufferPointer { buffer in
                    EVP_DigestSign(context, buffer.baseAddress, &length, message, messageCount)
                }
            }
            guard signed == 1 else {
                throw CryptoError.openSSL(.internalFailure, "OpenSSL could not make an ES256 signature.")
            }
            return Array(der.prefix(length))
        }
        return try ECDSASignature(derRepresentation: der)
    }

    /// The ECDH shared secret with `peer`: the 32-byte X coordinate of the shared point, as
    /// WebPush (RFC 8291) feeds into HKDF. Use it only through a KDF, never directly as a key.
    public func sharedSecret(with peer: P256PublicKey) throws -> [UInt8] {
        try key.withUnsafePointer { key in
            try peer.key.withUnsafePointer { peerKey in
                guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else {
                    throw CryptoError.openSSL(.internalFailure, "OpenSSL could not create a key context.")
                }
                defer { EVP_PKEY_CTX_free(context) }
                guard EVP_PKEY_derive_init(context) == 1 else {
                    throw CryptoError.openSSL(.internalFailure, "OpenSSL could not start ECDH.")
                }
                guard EVP_PKEY_derive_set_peer_ex(context, peerKey, 1) == 1 else {
                    throw CryptoError.openSSL(.invalidKey, "The peer's public key cannot be used for ECDH on P-256.")
                }
                var length = 0
                guard EVP_PKEY_derive(context, nil, &length) == 1, length == EVPKey.p256ScalarByteCount else {
                    throw CryptoError.openSSL(.internalFailure, "OpenSSL could not size the ECDH secret.")
                }
                var secret = [UInt8](repeating: 0, count: length)
                let derived = secret.withUnsafeMutableBufferPointer { buffer in
                    EVP_PKEY_derive(context, buffer.baseAddress, &length)
                }
                guard derived == 1, length == EVPKey.p256ScalarByteCount else {
                    throw CryptoError.openSSL(.internalFailure, "OpenSSL could not derive the ECDH secret.")
                }
                return secret
            }
        }
    }

    /// Computes d·G for a private scalar d, after checking 1 ≤ d < n.
    private static func publicPoint(forScalar scalar: [UInt8]) throws -> [UInt8] {
        guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1),
            let order = EC_GROUP_get0_order(group)
        else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not load the P-256 group.")
        }
        defer { EC_GROUP_free(group) }
        guard let secret = BN_secure_new() else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not allocate a big number.")
        }
        defer { BN_clear_free(secret) }
        guard scalar.withNonNullBytes({ BN_bin2bn($0, Int32($1), secret) }) != nil else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not read the private scalar.")
        }
        guard BN_is_zero(secret) == 0, BN_cmp(secret, order) < 0 else {
            throw CryptoError(
                .invalidKey,
                "The raw private key is not a valid P-256 scalar (it must be between 1 and the group order)."
            )
        }
        guard let point = EC_POINT_new(group) else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not allocate a curve point.")
        }
        defer { EC_POINT_clear_free(point) }
        guard EC_POINT_mul(group, point, secret, nil, nil, nil) == 1 else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not compute the public key.")
        }
        var encoded = [UInt8](repeating: 0, count: 1 + 2 * EVPKey.p256ScalarByteCount)
        let written = encoded.withUnsafeMutableBufferPointer { buffer in
            EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, buffer.baseAddress, buffer.count, nil)
        }
        guard written == encoded.count else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not encode the public key.")
        }
        return encoded
    }
}
