import COpenSSL

/// Cryptographically secure random bytes from OpenSSL's DRBG.
public enum SecureRandom {
    /// `count` random bytes. Stops the process if OpenSSL cannot produce them, since nothing that
    /// needs secure randomness can safely continue without it.
    public static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "SecureRandom.bytes needs a non-negative count")
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBufferPointer { buffer in
            forEachIntChunk(count: buffer.count) { offset, length in
                guard RAND_bytes(buffer.baseAddress! + offset, length) == 1 else {
                    fatalError(
                        "OpenSSL could not produce random bytes: \(OpenSSLErrorQueue.drain() ?? "no reason given")"
                    )
                }
            }
        }
        return bytes
    }
}
