import HeraldCrypto
import Testing

/// A known-answer vector from D. McGrew and J. Viega, "The Galois/Counter Mode of Operation
/// (GCM)", revised 2005, Appendix B (the test cases NIST's GCM validation uses).
struct GCMVector: Sendable, CustomTestStringConvertible {
    var name: String
    var key: String
    var nonce: String
    var plaintext: String
    var aad: String
    var ciphertext: String
    var tag: String

    var testDescription: String { name }
}

private let plaintext60 = """
    d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72
    1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39
    """

private let vectors = [
    GCMVector(
        name: "Test Case 1: AES-128, empty plaintext, no AAD",
        key: "00000000000000000000000000000000",
        nonce: "000000000000000000000000",
        plaintext: "",
        aad: "",
        ciphertext: "",
        tag: "58e2fccefa7e3061367f1d57a4e7455a"
    ),
    GCMVector(
        name: "Test Case 2: AES-128, one zero block",
        key: "00000000000000000000000000000000",
        nonce: "000000000000000000000000",
        plaintext: "00000000000000000000000000000000",
        aad: "",
        ciphertext: "0388dace60b6a392f328c2b971b2fe78",
        tag: "ab6e47d42cec13bdf53a67b21257bddf"
    ),
    GCMVector(
        name: "Test Case 4: AES-128, 60-byte plaintext, 20-byte AAD",
        key: "feffe9928665731c6d6a8f9467308308",
        nonce: "cafebabefacedbaddecaf888",
        plaintext: plaintext60,
        aad: "feedfacedeadbeeffeedfacedeadbeefabaddad2",
        ciphertext: """
            42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e
            21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091
            """,
        tag: "5bc94fbc3221a5db94fae95ae7121a47"
    ),
    GCMVector(
        name: "Test Case 13: AES-256, empty plaintext, no AAD",
        key: "0000000000000000000000000000000000000000000000000000000000000000",
        nonce: "000000000000000000000000",
        plaintext: "",
        aad: "",
        ciphertext: "",
        tag: "530f8afbc74536b9a963b4f1c4cb738b"
    ),
    GCMVector(
        name: "Test Case 14: AES-256, one zero block",
        key: "0000000000000000000000000000000000000000000000000000000000000000",
        nonce: "000000000000000000000000",
        plaintext: "00000000000000000000000000000000",
        aad: "",
        ciphertext: "cea7403d4d606b6e074ec5d3baf39d18",
        tag: "d0d1c8a799996bf0265b98b5d48ab919"
    ),
    GCMVector(
        name: "Test Case 16: AES-256, 60-byte plaintext, 20-byte AAD",
        key: "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
        nonce: "cafebabefacedbaddecaf888",
        plaintext: plaintext60,
        aad: "feedfacedeadbeeffeedfacedeadbeefabaddad2",
        ciphertext: """
            522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa
            8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662
            """,
        tag: "76fc6ece0f4e1768cddf8853bb2d551b"
    ),
]

@Suite("AES-GCM")
struct AESGCMTests {
    @Test("seal gives the published ciphertext and tag", arguments: vectors)
    func sealKnownAnswer(_ vector: GCMVector) throws {
        let sealed = try AESGCM.seal(
            hex(vector.plaintext),
            key: hex(vector.key),
            nonce: hex(vector.nonce),
            authenticating: hex(vector.aad)
        )
        #expect(sealed.ciphertext == hex(vector.ciphertext))
        #expect(sealed.tag == hex(vector.tag))
    }

    @Test("open recovers the published plaintext", arguments: vectors)
    func openKnownAnswer(_ vector: GCMVector) throws {
        let plaintext = try AESGCM.open(
            hex(vector.ciphertext),
            tag: hex(vector.tag),
            key: hex(vector.key),
            nonce: hex(vector.nonce),
            authenticating: hex(vector.aad)
        )
        #expect(plaintext == hex(vector.plaintext))
    }

    @Test("any change to ciphertext, tag, AAD, nonce or key fails authentication", arguments: [16, 32])
    func tamperDetection(keyByteCount: Int) throws {
        let key = SecureRandom.bytes(keyByteCount)
        let nonce = SecureRandom.bytes(12)
        let aad = Array("header".utf8)
        let message = Array("The quick brown fox jumps over the lazy dog".utf8)
        let (ciphertext, tag) = try AESGCM.seal(message, key: key, nonce: nonce, authenticating: aad)
        #expect(ciphertext != message)
        #expect(try AESGCM.open(ciphertext, tag: tag, key: key, nonce: nonce, authenticating: aad) == message)

        func flipped(_ bytes: [UInt8], at index: Int) -> [UInt8] {
            var bytes = bytes
            bytes[index] ^= 0x01
            return bytes
        }
        let attempts: [(String, () throws -> [UInt8])] = [
            (
                "ciphertext",
                { try AESGCM.open(flipped(ciphertext, at: 5), tag: tag, key: key, nonce: nonce, authenticating: aad) }
            ),
            (
                "tag",
                { try AESGCM.open(ciphertext, tag: flipped(tag, at: 15), key: key, nonce: nonce, authenticating: aad) }
            ),
            (
                "aad",
                { try AESGCM.open(ciphertext, tag: tag, key: key, nonce: nonce, authenticating: flipped(aad, at: 0)) }
            ),
            ("missing aad", { try AESGCM.open(ciphertext, tag: tag, key: key, nonce: nonce) }),
            (
                "nonce",
                { try AESGCM.open(ciphertext, tag: tag, key: key, nonce: flipped(nonce, at: 11), authenticating: aad) }
            ),
            (
                "key",
                { try AESGCM.open(ciphertext, tag: tag, key: flipped(key, at: 0), nonce: nonce, authenticating: aad) }
            ),
            (
                "truncated",
                { try AESGCM.open(Array(ciphertext.dropLast()), tag: tag, key: key, nonce: nonce, authenticating: aad) }
            ),
        ]
        for (what, attempt) in attempts {
            let error = #expect(throws: CryptoError.self, "changed \(what)") { try attempt() }
            #expect(error?.code == .authenticationFailure, "changed \(what)")
        }
    }

    @Test("keys, nonces and tags of the wrong size are rejected")
    func wrongSizes() {
        let cases: [(String, () throws -> Void)] = [
            (
                "24-byte key",
                {
                    _ = try AESGCM.seal(
                        [1],
                        key: [UInt8](repeating: 0, count: 24),
                        nonce: [UInt8](repeating: 0, count: 12)
                    )
                }
            ),
            (
                "15-byte key",
                {
                    _ = try AESGCM.seal(
                        [1],
                        key: [UInt8](repeating: 0, count: 15),
                        nonce: [UInt8](repeating: 0, count: 12)
                    )
                }
            ),
            ("empty key", { _ = try AESGCM.seal([1], key: [], nonce: [UInt8](repeating: 0, count: 12)) }),
            (
                "8-byte nonce",
                {
                    _ = try AESGCM.seal(
                        [1],
                        key: [UInt8](repeating: 0, count: 16),
                        nonce: [UInt8](repeating: 0, count: 8)
                    )
                }
            ),
            (
                "12-byte tag",
                {
                    _ = try AESGCM.open(
                        [1],
                        tag: [UInt8](repeating: 0, count: 12),
                        key: [UInt8](repeating: 0, count: 16),
                        nonce: [UInt8](repeating: 0, count: 12)
                    )
                }
            ),
        ]
        for (what, attempt) in cases {
            let error = #expect(throws: CryptoError.self, "\(what)") { try attempt() }
            #expect(error?.code == .invalidArgument, "\(what)")
            #expect(error?.description.contains("bytes") == true, "\(what)")
        }
    }

    @Test("a large message round-trips")
    func largeMessage() throws {
        let key = SecureRandom.bytes(32)
        let nonce = SecureRandom.bytes(12)
        let message = SecureRandom.bytes(1 << 20)
        let (ciphertext, tag) = try AESGCM.seal(message, key: key, nonce: nonce)
        #expect(ciphertext.count == message.count)
        #expect(try AESGCM.open(ciphertext, tag: tag, key: key, nonce: nonce) == message)
    }
}
