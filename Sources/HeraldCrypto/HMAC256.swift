import COpenSSL

/// HMAC with SHA-256 (RFC 2104).
public enum HMAC256 {
    /// The HMAC-SHA-256 of `data` under `key`, 32 bytes. Any key length is allowed, including empty.
    public static func authenticationCode(for data: [UInt8], key: [UInt8]) -> [UInt8] {
        var code = [UInt8](repeating: 0, count: SHA256.byteCount)
        var length = 0
        let result = key.withNonNullBytes { key, keyCount in
            data.withNonNullBytes { data, dataCount in
                code.withUnsafeMutableBufferPointer { code in
                    EVP_Q_mac(
                        nil,
                        "HMAC",
                        nil,
                        "SHA256",
                        nil,
                        key,
                        keyCount,
                        data,
                        dataCount,
                        code.baseAddress,
                        code.count,
                        &length
                    )
                }
            }
        }
        guard result != nil, length == SHA256.byteCount else {
            fatalError("OpenSSL could not compute HMAC-SHA-256: \(OpenSSLErrorQueue.drain() ?? "no reason given")")
        }
        return code
    }
}
