import COpenSSL

/// SHA-256 (FIPS 180-4).
public enum SHA256 {
    /// Bytes in a SHA-256 digest.
    public static let byteCount = 32

    /// The SHA-256 digest of `data`, 32 bytes.
    public static func hash(_ data: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: byteCount)
        var length: UInt32 = 0
        let result = data.withNonNullBytes { data, count in
            digest.withUnsafeMutableBufferPointer { digest in
                EVP_Digest(data, count, digest.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        guard result == 1, length == byteCount else {
            fatalError("OpenSSL could not compute SHA-256: \(OpenSSLErrorQueue.drain() ?? "no reason given")")
        }
        return digest
    }
}
