import COpenSSL

/// AES in Galois/Counter Mode (NIST SP 800-38D) with 128- or 256-bit keys, 96-bit nonces and
/// 128-bit tags.
///
/// Never seal two messages with the same key and nonce.
public enum AESGCM {
    /// Bytes in a nonce.
    public static let nonceByteCount = 12
    /// Bytes in a tag.
    public static let tagByteCount = 16

    /// Encrypts and authenticates `plaintext`, and authenticates `aad` without encrypting it.
    ///
    /// - Parameters:
    ///   - key: 16 bytes (AES-128-GCM) or 32 bytes (AES-256-GCM).
    ///   - nonce: 12 bytes, unique for this key.
    /// - Returns: the ciphertext (as long as the plaintext) and the 16-byte tag.
    /// - Throws: ``CryptoError`` with code `.invalidArgument` for a key or nonce of the wrong size.
    public static func seal(
        _ plaintext: [UInt8],
        key: [UInt8],
        nonce: [UInt8],
        authenticating aad: [UInt8] = []
    ) throws -> (ciphertext: [UInt8], tag: [UInt8]) {
        let context = try Context(encrypting: true, key: key, nonce: nonce)
        try context.update(additionalData: aad)
        let ciphertext = try context.update(plaintext)
        try context.finish()
        var tag = [UInt8](repeating: 0, count: tagByteCount)
        let result = tag.withUnsafeMutableBytes { tag in
            EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_GCM_GET_TAG, Int32(tagByteCount), tag.baseAddress)
        }
        guard result == 1 else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not produce the AES-GCM tag.")
        }
        return (ciphertext, tag)
    }

    /// Checks the tag and decrypts `ciphertext`.
    ///
    /// - Parameters:
    ///   - tag: the 16-byte tag from ``seal(_:key:nonce:authenticating:)``.
    ///   - key: 16 bytes (AES-128-GCM) or 32 bytes (AES-256-GCM).
    ///   - nonce: 12 bytes.
    ///   - aad: the associated data given to `seal`.
    /// - Throws: ``CryptoError`` with code `.authenticationFailure` when the ciphertext, tag,
    ///   nonce, key or associated data differ from what was sealed (no plaintext is returned),
    ///   and `.invalidArgument` for a key, nonce or tag of the wrong size.
    public static func open(
        _ ciphertext: [UInt8],
        tag: [UInt8],
        key: [UInt8],
        nonce: [UInt8],
        authenticating aad: [UInt8] = []
    ) throws -> [UInt8] {
        guard tag.count == tagByteCount else {
            throw CryptoError(.invalidArgument, "An AES-GCM tag is 16 bytes; got \(tag.count).")
        }
        let context = try Context(encrypting: false, key: key, nonce: nonce)
        try context.update(additionalData: aad)
        var plaintext = try context.update(ciphertext)
        var tagCopy = tag
        let result = tagCopy.withUnsafeMutableBytes { tag in
            EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_GCM_SET_TAG, Int32(tagByteCount), tag.baseAddress)
        }
        guard result == 1 else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not set the AES-GCM tag.")
        }
        do {
            try context.finish()
        } catch {
            plaintext.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
            OpenSSLErrorQueue.clear()
            throw CryptoError(
                .authenticationFailure,
                "AES-GCM authentication failed: the ciphertext, tag, nonce, key or associated data is wrong."
            )
        }
        return plaintext
    }

    /// Owns one `EVP_CIPHER_CTX` for one seal or open.
    private final class Context {
        let pointer: OpaquePointer
        private let encrypting: Bool

        init(encrypting: Bool, key: [UInt8], nonce: [UInt8]) throws {
            let cipher: OpaquePointer?
            switch key.count {
            case 16: cipher = EVP_aes_128_gcm()
            case 32: cipher = EVP_aes_256_gcm()
            default:
                throw CryptoError(.invalidArgument, "An AES-GCM key is 16 or 32 bytes; got \(key.count).")
            }
            guard nonce.count == nonceByteCount else {
                throw CryptoError(.invalidArgument, "An AES-GCM nonce is 12 bytes; got \(nonce.count).")
            }
            guard let pointer = EVP_CIPHER_CTX_new() else {
                throw CryptoError.openSSL(.internalFailure, "OpenSSL could not allocate a cipher context.")
            }
            self.pointer = pointer
            self.encrypting = encrypting
            let result = key.withNonNullBytes { key, _ in
                nonce.withNonNullBytes { nonce, _ in
                    encrypting
                        ? EVP_EncryptInit_ex(pointer, cipher, nil, key, nonce)
                        : EVP_DecryptInit_ex(pointer, cipher, nil, key, nonce)
                }
            }
            guard result == 1 else {
                throw CryptoError.openSSL(.internalFailure, "OpenSSL could not start AES-GCM.")
            }
        }

        deinit {
            EVP_CIPHER_CTX_free(pointer)
        }

        func update(additionalData: [UInt8]) throws {
            try additionalData.withNonNullBytes { data, count in
                try forEachIntChunk(count: count) { offset, length in
                    var written: Int32 = 0
                    let result =
                        encrypting
                        ? EVP_EncryptUpdate(pointer, nil, &written, data + offset, length)
                        : EVP_DecryptUpdate(pointer, nil, &written, data + offset, length)
                    guard result == 1 else {
                        throw CryptoError.openSSL(
                            .internalFailure,
                            "OpenSSL could not take the AES-GCM associated data."
                        )
                    }
                }
            }
        }

        func update(_ input: [UInt8]) throws -> [UInt8] {
            try input.withNonNullBytes { input, count in
                try [UInt8](unsafeUninitializedCapacity: count) { output, initialized in
                    initialized = 0
                    try forEachIntChunk(count: count) { offset, length in
                        var written: Int32 = 0
                        let result =
                            encrypting
                            ? EVP_EncryptUpdate(pointer, output.baseAddress! + offset, &written, input + offset, length)
                            : EVP_DecryptUpdate(pointer, output.baseAddress! + offset, &written, input + offset, length)
                        guard result == 1, written == length else {
                            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not run AES-GCM.")
                        }
                        initialized += Int(written)
                    }
                }
            }
        }

        func finish() throws {
            // GCM is a stream mode: finishing writes no bytes, but the buffer must be valid.
            var scratch = [UInt8](repeating: 0, count: 16)
            var written: Int32 = 0
            let result = scratch.withUnsafeMutableBufferPointer { scratch in
                encrypting
                    ? EVP_EncryptFinal_ex(pointer, scratch.baseAddress, &written)
                    : EVP_DecryptFinal_ex(pointer, scratch.baseAddress, &written)
            }
            guard result == 1, written == 0 else {
                throw CryptoError.openSSL(.internalFailure, "OpenSSL could not finish AES-GCM.")
            }
        }
    }
}
