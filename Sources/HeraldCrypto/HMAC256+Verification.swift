import COpenSSL

extension HMAC256 {
    /// Whether `code` is the HMAC-SHA-256 of `data` under `key`, compared with OpenSSL's
    /// `CRYPTO_memcmp`, whose time does not depend on where the bytes differ: a caller probing
    /// signatures learns nothing from how long a refusal takes.
    public static func isValidAuthenticationCode(_ code: [UInt8], for data: [UInt8], key: [UInt8]) -> Bool {
        let expected = authenticationCode(for: data, key: key)
        guard code.count == expected.count else { return false }
        return code.withNonNullBytes { code, count in
            expected.withNonNullBytes { expected, _ in CRYPTO_memcmp(code, expected, count) == 0 }
        }
    }
}
