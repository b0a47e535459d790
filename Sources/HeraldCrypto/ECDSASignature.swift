import COpenSSL

/// An ECDSA P-256 signature, convertible between the two encodings in use:
///
/// - raw: R || S, 32 bytes each, left-padded: the JOSE / JWT "ES256" form (RFC 7518 §3.4);
/// - DER: `SEQUENCE { INTEGER r, INTEGER s }`: the form OpenSSL and X.509 use.
public struct ECDSASignature: Sendable, Hashable {
    /// R || S, always 64 bytes.
    public let rawRepresentation: [UInt8]
    /// The DER `ECDSA-Sig-Value`.
    public let derRepresentation: [UInt8]

    private static let componentByteCount = 32

    /// Makes a signature from R || S (64 bytes).
    ///
    /// - Throws: ``CryptoError`` with code `.invalidSignature` for another length.
    public init(rawRepresentation: [UInt8]) throws {
        guard rawRepresentation.count == 2 * Self.componentByteCount else {
            throw CryptoError(
                .invalidSignature,
                "A raw ES256 signature is 64 bytes (R || S); got \(rawRepresentation.count)."
            )
        }
        self.rawRepresentation = rawRepresentation
        self.derRepresentation = try Self.der(fromRaw: rawRepresentation)
    }

    /// Makes a signature from its DER encoding.
    ///
    /// - Throws: ``CryptoError`` with code `.invalidSignature` unless the bytes are exactly one
    ///   canonical DER `SEQUENCE` of two non-negative integers that each fit in 32 bytes.
    public init(derRepresentation: [UInt8]) throws {
        let raw = try Self.raw(fromDER: derRepresentation)
        // Re-encoding must give back the input: this rejects BER, padding and trailing bytes.
        guard try Self.der(fromRaw: raw) == derRepresentation else {
            throw CryptoError(.invalidSignature, "The ECDSA signature is not canonical DER.")
        }
        self.rawRepresentation = raw
        self.derRepresentation = derRepresentation
    }

    private static func raw(fromDER der: [UInt8]) throws -> [UInt8] {
        guard !der.isEmpty, der.count <= Int(Int32.max) else {
            throw CryptoError(.invalidSignature, "The DER ECDSA signature is empty or too long.")
        }
        return try der.withNonNullBytes { base, count in
            var cursor: UnsafePointer<UInt8>? = base
            guard let signature = d2i_ECDSA_SIG(nil, &cursor, count) else {
                throw CryptoError.openSSL(.invalidSignature, "The bytes are not a DER ECDSA signature.")
            }
            defer { ECDSA_SIG_free(signature) }
            guard cursor == base + count else {
                OpenSSLErrorQueue.clear()
                throw CryptoError(.invalidSignature, "The DER ECDSA signature has trailing bytes.")
            }
            var raw = [UInt8](repeating: 0, count: 2 * componentByteCount)
            for (index, component) in [ECDSA_SIG_get0_r(signature), ECDSA_SIG_get0_s(signature)].enumerated() {
                guard let component, BN_is_negative(component) == 0,
                    copenssl_bn_num_bytes(component) <= componentByteCount
                else {
                    throw CryptoError(
                        .invalidSignature,
                        "An ECDSA P-256 signature component is negative or longer than 32 bytes."
                    )
                }
                let written = raw.withUnsafeMutableBufferPointer { buffer in
                    BN_bn2binpad(
                        component,
                        buffer.baseAddress! + index * componentByteCount,
                        Int32(componentByteCount)
                    )
                }
                guard written == componentByteCount else {
                    throw CryptoError.openSSL(.internalFailure, "OpenSSL could not encode a signature component.")
                }
            }
            return raw
        }
    }

    private static func der(fromRaw raw: [UInt8]) throws -> [UInt8] {
        guard let signature = ECDSA_SIG_new() else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not allocate an ECDSA signature.")
        }
        defer { ECDSA_SIG_free(signature) }
        let (r, s) = raw.withNonNullBytes { base, _ in
            (
                BN_bin2bn(base, Int32(componentByteCount), nil),
                BN_bin2bn(base + componentByteCount, Int32(componentByteCount), nil)
            )
        }
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not build an ECDSA signature.")
        }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not size a DER ECDSA signature.")
        }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        guard written == length else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not encode a DER ECDSA signature.")
        }
        return der
    }
}
