import HeraldCrypto
import Testing

@Suite("SHA-256, HMAC-SHA-256 and HKDF-SHA-256 known answers")
struct DigestTests {
    // FIPS 180-4 examples (NIST CSRC "SHA256.pdf", one-block and two-block messages) and the
    // well-known digest of the empty string.
    @Test(
        arguments: [
            ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            (
                "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
            ),
            ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ]
    )
    func sha256(message: String, digest: String) {
        #expect(SHA256.hash(Array(message.utf8)) == hex(digest))
    }

    @Test("SHA-256 of a million 'a's (FIPS 180-4 long message)")
    func sha256LongMessage() {
        let message = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(SHA256.hash(message) == hex("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"))
    }

    @Test("HMAC-SHA-256, RFC 4231 test case 2 (key shorter than the block)")
    func hmacRFC4231Case2() {
        let code = HMAC256.authenticationCode(for: Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8))
        #expect(code == hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
    }

    @Test("HMAC-SHA-256, RFC 4231 test case 1")
    func hmacRFC4231Case1() {
        let code = HMAC256.authenticationCode(
            for: Array("Hi There".utf8),
            key: [UInt8](repeating: 0x0b, count: 20)
        )
        #expect(code == hex("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"))
    }

    @Test("HMAC-SHA-256 accepts an empty key and empty data")
    func hmacEmpty() {
        // HMAC-SHA-256("", "") as computed by every implementation (e.g. Python's hmac module).
        #expect(
            HMAC256.authenticationCode(for: [], key: [])
                == hex("b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
        )
    }

    @Test("HKDF-SHA-256, RFC 5869 test case 1")
    func hkdfRFC5869Case1() throws {
        let inputKeyMaterial = [UInt8](repeating: 0x0b, count: 22)
        let salt = hex("000102030405060708090a0b0c")
        let info = hex("f0f1f2f3f4f5f6f7f8f9")
        let output = try HKDF.deriveKey(inputKeyMaterial: inputKeyMaterial, salt: salt, info: info, outputByteCount: 42)
        #expect(
            output
                == hex(
                    "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
                )
        )
        // The extract step is HMAC(salt, IKM); RFC 5869 lists its PRK.
        #expect(
            HMAC256.authenticationCode(for: inputKeyMaterial, key: salt)
                == hex("077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5")
        )
    }

    @Test("HKDF-SHA-256, RFC 5869 test case 3 (empty salt and info)")
    func hkdfRFC5869Case3() throws {
        let output = try HKDF.deriveKey(
            inputKeyMaterial: [UInt8](repeating: 0x0b, count: 22),
            salt: [],
            info: [],
            outputByteCount: 42
        )
        #expect(
            output
                == hex(
                    "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"
                )
        )
    }

    @Test("HKDF-SHA-256 output is a prefix-consistent stream up to 255 blocks, and no further")
    func hkdfOutputLengths() throws {
        let long = try HKDF.deriveKey(
            inputKeyMaterial: [1, 2, 3],
            salt: [4],
            info: [5],
            outputByteCount: HKDF.maximumOutputByteCount
        )
        let short = try HKDF.deriveKey(inputKeyMaterial: [1, 2, 3], salt: [4], info: [5], outputByteCount: 16)
        #expect(long.count == 255 * 32)
        #expect(Array(long.prefix(16)) == short)
        for badCount in [0, -1, HKDF.maximumOutputByteCount + 1] {
            let error = #expect(throws: CryptoError.self) {
                try HKDF.deriveKey(inputKeyMaterial: [1], salt: [], info: [], outputByteCount: badCount)
            }
            #expect(error?.code == .invalidArgument)
        }
    }

    @Test("SecureRandom gives the requested number of bytes, different every time")
    func secureRandom() {
        #expect(SecureRandom.bytes(0).isEmpty)
        let first = SecureRandom.bytes(32)
        let second = SecureRandom.bytes(32)
        #expect(first.count == 32)
        #expect(first != second)
        #expect(first != [UInt8](repeating: 0, count: 32))
        // All 256 byte values show up in a large sample (fails with probability ~ 256·e^-256).
        #expect(Set(SecureRandom.bytes(65_536)).count == 256)
    }
}
