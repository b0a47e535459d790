import COpenSSL

/// HKDF with SHA-256 (RFC 5869): extract then expand, through OpenSSL's "HKDF" EVP_KDF.
public enum HKDF {
    /// The most output HKDF-SHA-256 can produce: 255 blocks of 32 bytes.
    public static let maximumOutputByteCount = 255 * SHA256.byteCount

    /// Derives `outputByteCount` bytes from `inputKeyMaterial`.
    ///
    /// - Parameters:
    ///   - inputKeyMaterial: the secret, such as an ECDH shared secret.
    ///   - salt: the extract salt; empty means a string of zeros, as RFC 5869 specifies.
    ///   - info: context bound into the output; may be empty.
    ///   - outputByteCount: 1 through ``maximumOutputByteCount``.
    /// - Throws: ``CryptoError`` with code `.invalidArgument` for an output length out of range.
    public static func deriveKey(
        inputKeyMaterial: [UInt8],
        salt: [UInt8],
        info: [UInt8],
        outputByteCount: Int
    ) throws -> [UInt8] {
        guard (1...maximumOutputByteCount).contains(outputByteCount) else {
            throw CryptoError(
                .invalidArgument,
                "HKDF-SHA-256 output must be 1 to \(maximumOutputByteCount) bytes; \(outputByteCount) was asked for."
            )
        }
        guard let algorithm = EVP_KDF_fetch(nil, "HKDF", nil) else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL has no HKDF implementation.")
        }
        defer { EVP_KDF_free(algorithm) }
        guard let context = EVP_KDF_CTX_new(algorithm) else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not allocate an HKDF context.")
        }
        defer { EVP_KDF_CTX_free(context) }

        let parameters = OpenSSLParameters()
        parameters.appendString(OSSL_KDF_PARAM_DIGEST, "SHA256")
        parameters.appendBytes(OSSL_KDF_PARAM_KEY, inputKeyMaterial)
        if !salt.isEmpty {
            parameters.appendBytes(OSSL_KDF_PARAM_SALT, salt)
        }
        if !info.isEmpty {
            parameters.appendBytes(OSSL_KDF_PARAM_INFO, info)
        }
        var output = [UInt8](repeating: 0, count: outputByteCount)
        let result = parameters.withUnsafeParameters { parameters in
            output.withUnsafeMutableBufferPointer { output in
                EVP_KDF_derive(context, output.baseAddress, output.count, parameters)
            }
        }
        guard result == 1 else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not derive an HKDF-SHA-256 key.")
        }
        return output
    }
}
