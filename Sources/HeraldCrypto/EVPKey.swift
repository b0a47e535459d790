import COpenSSL

/// Owns one OpenSSL `EVP_PKEY` and frees it in `deinit`. The pointer never leaves this module.
///
/// `@unchecked Sendable` is safe because the key is never modified after `init`: every operation
/// creates its own `EVP_PKEY_CTX` or `EVP_MD_CTX` and only reads the key, and OpenSSL 3 documents
/// `EVP_PKEY` as safe to use from several threads at once for such read-only use (its reference
/// count and provider-export cache are locked internally).
final class EVPKey: @unchecked Sendable {
    private let pointer: OpaquePointer

    /// Takes ownership of `pointer`, which must come from an OpenSSL call that returns a new key.
    init(takingOwnershipOf pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        EVP_PKEY_free(pointer)
    }

    /// Calls `body` with the key, keeping this owner alive until it returns.
    func withUnsafePointer<Result>(_ body: (OpaquePointer) throws -> Result) rethrows -> Result {
        try withExtendedLifetime(self) { try body(pointer) }
    }
}

// MARK: - P-256 specifics

extension EVPKey {
    /// OpenSSL's name for P-256 (secp256r1, NIST P-256).
    static let p256GroupName = "prime256v1"
    /// Bytes in a P-256 field element or scalar.
    static let p256ScalarByteCount = 32

    /// Throws unless this is an EC key on the named curve P-256.
    func requireP256(_ what: String) throws {
        let (type, group) = algorithm()
        guard type == "EC", group == Self.p256GroupName else {
            let found = group.map { "\(type) key on curve \($0)" } ?? "\(type) key"
            OpenSSLErrorQueue.clear()
            throw CryptoError(
                .unsupportedKey,
                "The \(what) is a \(found); only EC keys on the named curve P-256 (prime256v1) are supported."
            )
        }
    }

    /// The key type ("EC", "RSA", "ED25519", …) and, for EC keys with a named curve, the curve.
    private func algorithm() -> (type: String, group: String?) {
        withUnsafePointer { key in
            let type = EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "unknown"
            guard EVP_PKEY_is_a(key, "EC") == 1 else {
                return (type, nil)
            }
            var buffer = [CChar](repeating: 0, count: 80)
            var length = 0
            let found = buffer.withUnsafeMutableBufferPointer { buffer in
                EVP_PKEY_get_utf8_string_param(
                    key,
                    OSSL_PKEY_PARAM_GROUP_NAME,
                    buffer.baseAddress,
                    buffer.count,
                    &length
                ) == 1
            }
            guard found else {
                return ("EC", "explicit parameters")
            }
            let name = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return ("EC", name)
        }
    }

    /// The public point as 0x04 || X || Y, whatever point form the key was read in.
    func p256PublicPoint() throws -> [UInt8] {
        let x = try bigNumberParameter(OSSL_PKEY_PARAM_EC_PUB_X)
        let y = try bigNumberParameter(OSSL_PKEY_PARAM_EC_PUB_Y)
        return [0x04] + x + y
    }

    /// The private scalar, 32 big-endian bytes.
    func p256PrivateScalar() throws -> [UInt8] {
        try bigNumberParameter(OSSL_PKEY_PARAM_PRIV_KEY)
    }

    /// A big-number key parameter as 32 big-endian bytes, left-padded with zeros.
    private func bigNumberParameter(_ name: String) throws -> [UInt8] {
        try withUnsafePointer { key in
            var number: OpaquePointer? = nil
            guard EVP_PKEY_get_bn_param(key, name, &number) == 1, let number else {
                throw CryptoError.openSSL(.internalFailure, "OpenSSL could not read the key's \(name) component.")
            }
            defer { BN_clear_free(number) }
            var bytes = [UInt8](repeating: 0, count: Self.p256ScalarByteCount)
            let written = bytes.withUnsafeMutableBufferPointer { buffer in
                BN_bn2binpad(number, buffer.baseAddress, Int32(buffer.count))
            }
            guard written == Self.p256ScalarByteCount else {
                throw CryptoError.openSSL(.internalFailure, "The key's \(name) component does not fit in 32 bytes.")
            }
            return bytes
        }
    }

    /// Makes a P-256 key from its parts. The public point must be uncompressed (65 bytes) and is
    /// checked to lie on the curve; the private scalar, when given, must match it.
    static func makeP256(publicPoint: [UInt8], privateScalar: [UInt8]? = nil) throws -> EVPKey {
        let parameters = OpenSSLParameters()
        parameters.appendString(OSSL_PKEY_PARAM_GROUP_NAME, p256GroupName)
        parameters.appendBytes(OSSL_PKEY_PARAM_PUB_KEY, publicPoint)
        if let privateScalar {
            parameters.appendUnsignedInteger(OSSL_PKEY_PARAM_PRIV_KEY, bigEndian: privateScalar)
        }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not create an EC key context.")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer? = nil
        let selection = privateScalar == nil ? copenssl_evp_pkey_public_key() : copenssl_evp_pkey_keypair()
        let made = parameters.withUnsafeParameters { parameters in
            EVP_PKEY_fromdata_init(context) == 1
                && EVP_PKEY_fromdata(context, &key, selection, UnsafeMutablePointer(mutating: parameters)) == 1
        }
        guard made, let key else {
            throw CryptoError.openSSL(.invalidKey, "The public key is not a point on the P-256 curve.")
        }
        let owner = EVPKey(takingOwnershipOf: key)
        try owner.checkPublicPoint()
        return owner
    }

    /// Checks that the public point is valid (on the curve, not the point at infinity).
    private func checkPublicPoint() throws {
        try withUnsafePointer { key in
            guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else {
                throw CryptoError.openSSL(.internalFailure, "OpenSSL could not create a key context.")
            }
            defer { EVP_PKEY_CTX_free(context) }
            guard EVP_PKEY_public_check_quick(context) == 1 else {
                throw CryptoError.openSSL(.invalidKey, "The public key is not a valid point on the P-256 curve.")
            }
        }
    }
}
