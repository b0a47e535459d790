import COpenSSL

/// A public key on the NIST P-256 curve: verifies ES256 signatures and is the peer in ECDH.
///
/// Two keys are equal when they are the same point.
public struct P256PublicKey: Sendable, Hashable, CustomStringConvertible {
    let key: EVPKey
    /// The point in ANSI X9.63 uncompressed form: 0x04 || X || Y, 65 bytes (WebPush `p256dh`, VAPID
    /// public keys).
    public let x963Representation: [UInt8]

    /// Reads a public key from SPKI PEM (`-----BEGIN PUBLIC KEY-----`), tolerating the same
    /// whitespace as ``P256PrivateKey/init(pemRepresentation:)``.
    ///
    /// - Throws: ``CryptoError`` with code `.invalidKey` for text that holds no readable public
    ///   key, and `.unsupportedKey` for a key that is not on P-256.
    public init(pemRepresentation: String) throws {
        guard pemRepresentation.contains("-----BEGIN PUBLIC KEY-----") else {
            throw CryptoError(.invalidKey, "The text holds no -----BEGIN PUBLIC KEY----- (SPKI) PEM block.")
        }
        let key: OpaquePointer? = try MemoryBIO.reading(PEMText.normalized(pemRepresentation)) { bio in
            PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        guard let key else {
            throw CryptoError.openSSL(.invalidKey, "The PEM public key could not be read.")
        }
        // OpenSSL's decoders may leave notes from the formats they tried; the read succeeded.
        OpenSSLErrorQueue.clear()
        let owner = EVPKey(takingOwnershipOf: key)
        try owner.requireP256("PEM public key")
        self.key = owner
        self.x963Representation = try owner.p256PublicPoint()
    }

    /// Makes a key from the 65-byte uncompressed point 0x04 || X || Y.
    ///
    /// - Throws: ``CryptoError`` with code `.invalidKey` for another length or prefix (compressed
    ///   points are not accepted), or a point that is not on the curve.
    public init(x963Representation: [UInt8]) throws {
        guard x963Representation.count == 1 + 2 * EVPKey.p256ScalarByteCount, x963Representation.first == 0x04 else {
            throw CryptoError(
                .invalidKey,
                "A P-256 public key is 65 bytes starting with 0x04 (uncompressed); got \(x963Representation.count) bytes."
            )
        }
        self.key = try EVPKey.makeP256(publicPoint: x963Representation)
        self.x963Representation = x963Representation
    }

    /// The key as SPKI PEM (`-----BEGIN PUBLIC KEY-----`).
    public var pemRepresentation: String {
        do {
            return try key.withUnsafePointer { key in
                try MemoryBIO.writing("public key PEM") { bio in
                    PEM_write_bio_PUBKEY(bio, key)
                }
            }
        } catch {
            fatalError("OpenSSL could not write a P-256 public key it holds: \(error)")
        }
    }

    /// Whether `signature` is a valid ECDSA P-256 / SHA-256 (ES256) signature of `message` by the
    /// holder of the matching private key.
    public func isValidSignature(_ signature: ECDSASignature, for message: [UInt8]) -> Bool {
        guard let context = EVP_MD_CTX_new() else {
            OpenSSLErrorQueue.clear()
            return false
        }
        defer { EVP_MD_CTX_free(context) }
        let der = signature.derRepresentation
        let result = key.withUnsafePointer { key -> Int32 in
            guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else {
                return 0
            }
            return der.withNonNullBytes { der, derCount in
                message.withNonNullBytes { message, messageCount in
                    EVP_DigestVerify(context, der, derCount, message, messageCount)
                }
            }
        }
        // A signature that does not verify leaves reasons on the queue; they are not errors here.
        OpenSSLErrorQueue.clear()
        return result == 1
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.x963Representation == rhs.x963Representation
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(x963Representation)
    }

    public var description: String {
        "P256PublicKey(\(Base64URL.encode(x963Representation)))"
    }
}
