import HeraldCrypto
import Testing

/// RFC 6979 Appendix A.2.5: the P-256 key and its published public point.
enum RFC6979 {
    static let privateKey = hex("C9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721")
    static let publicKey = hex(
        """
        04
        60FED4BA255A9D31C961EB74C6356D68C049B8923B61FA6CE669622E60F29FB6
        7903FE1008B8BC99A41AE9E95628BC64F2F1B20C2D7E9F5177A3C294D4462299
        """
    )
    /// The same public key as SPKI PEM.
    static let publicKeyPEM = """
        -----BEGIN PUBLIC KEY-----
        MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEYP7UuiVanTHJYet0xjVtaMBJuJI7
        Yfps5mliLmDyn7Z5A/4QCLi8maQa6elWKLxk8vGyDC1+n1F3o8KU1EYimQ==
        -----END PUBLIC KEY-----

        """
    /// The deterministic ECDSA-SHA-256 signature of "sample", R || S.
    static let sampleSignature = hex(
        """
        EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716
        F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8
        """
    )
}

@Suite("ECDSA P-256 / SHA-256 (ES256)")
struct ECDSATests {
    @Test("a signature verifies with the signer's public key, and only for its message and key")
    func signAndVerify() throws {
        let key = P256PrivateKey()
        let message = Array("eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJURUFNSUQifQ".utf8)
        let signature = try key.signature(for: message)
        #expect(signature.rawRepresentation.count == 64)
        #expect(key.publicKey.isValidSignature(signature, for: message))
        #expect(!key.publicKey.isValidSignature(signature, for: message + [0]))
        #expect(!P256PrivateKey().publicKey.isValidSignature(signature, for: message))
        var tampered = signature.rawRepresentation
        tampered[63] ^= 0x01
        #expect(!key.publicKey.isValidSignature(try ECDSASignature(rawRepresentation: tampered), for: message))
        // ECDSA is randomized: a second signature differs and also verifies.
        let again = try key.signature(for: message)
        #expect(again != signature)
        #expect(key.publicKey.isValidSignature(again, for: message))
    }

    @Test("one key signs and verifies from many tasks at once")
    func concurrentUse() async throws {
        let key = P256PrivateKey()
        let publicKey = key.publicKey
        let results = try await withThrowingTaskGroup(of: Bool.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var allValid = true
                    for index in 0..<25 {
                        let message = [UInt8(task), UInt8(index)]
                        let signature = try key.signature(for: message)
                        allValid = allValid && publicKey.isValidSignature(signature, for: message)
                        allValid = allValid && !publicKey.isValidSignature(signature, for: message + [1])
                    }
                    return allValid
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results == [Bool](repeating: true, count: 8))
    }

    @Test("the empty message can be signed and verified")
    func emptyMessage() throws {
        let key = P256PrivateKey()
        let signature = try key.signature(for: [])
        #expect(key.publicKey.isValidSignature(signature, for: []))
        #expect(!key.publicKey.isValidSignature(signature, for: [0]))
    }

    @Test("RFC 6979 A.2.5: the private key gives the published public key, which verifies the published signature")
    func rfc6979Vector() throws {
        let key = try P256PrivateKey(rawRepresentation: RFC6979.privateKey)
        #expect(key.publicKey.x963Representation == RFC6979.publicKey)
        #expect(key.rawRepresentation == RFC6979.privateKey)
        let publicKey = try P256PublicKey(pemRepresentation: RFC6979.publicKeyPEM)
        #expect(publicKey == key.publicKey)
        let signature = try ECDSASignature(rawRepresentation: RFC6979.sampleSignature)
        #expect(publicKey.isValidSignature(signature, for: Array("sample".utf8)))
        #expect(!publicKey.isValidSignature(signature, for: Array("test".utf8)))
        // Our own (randomized) signature with the RFC key verifies under the published key.
        #expect(publicKey.isValidSignature(try key.signature(for: Array("sample".utf8)), for: Array("sample".utf8)))
    }

    @Test("raw and DER convert both ways, and DER integers are minimal")
    func rawDERRoundTrip() throws {
        let key = P256PrivateKey()
        for index in 0..<20 {
            let signature = try key.signature(for: [UInt8(index)])
            let fromDER = try ECDSASignature(derRepresentation: signature.derRepresentation)
            let fromRaw = try ECDSASignature(rawRepresentation: signature.rawRepresentation)
            #expect(fromDER == signature)
            #expect(fromRaw.derRepresentation == signature.derRepresentation)
            #expect(fromDER.rawRepresentation == signature.rawRepresentation)
        }

        // r with its top bit set needs a 0x00 in DER; s = 1 is a one-byte integer and must come
        // back left-padded to 32 bytes in raw form.
        let r = [0x80] + [UInt8](repeating: 0x11, count: 31)
        let s = [UInt8](repeating: 0, count: 31) + [0x01]
        let signature = try ECDSASignature(rawRepresentation: r + s)
        let expectedDER = [0x30, 0x26, 0x02, 0x21, 0x00] + r + [0x02, 0x01, 0x01]
        #expect(signature.derRepresentation == expectedDER)
        let parsed = try ECDSASignature(derRepresentation: expectedDER)
        #expect(parsed.rawRepresentation == r + s)
        #expect(parsed.rawRepresentation.count == 64)
    }

    @Test("malformed signatures are rejected with a clear error")
    func malformedSignatures() throws {
        let valid = try P256PrivateKey().signature(for: [1, 2, 3]).derRepresentation
        let badDER: [(String, [UInt8])] = [
            ("empty", []),
            ("garbage", Array("not a signature".utf8)),
            ("trailing byte", valid + [0]),
            ("truncated", Array(valid.dropLast())),
            // INTEGER 1 written with a redundant leading zero: BER, not DER.
            ("non-minimal integer", [0x30, 0x07, 0x02, 0x02, 0x00, 0x01, 0x02, 0x01, 0x01]),
            // A 33-byte r without a sign byte does not fit P-256.
            ("r too long", [0x30, 0x26, 0x02, 0x21] + [UInt8](repeating: 0x7F, count: 33) + [0x02, 0x01, 0x01]),
            ("negative r", [0x30, 0x06, 0x02, 0x01, 0x80, 0x02, 0x01, 0x01]),
        ]
        for (what, bytes) in badDER {
            let error = #expect(throws: CryptoError.self, "\(what)") {
                try ECDSASignature(derRepresentation: bytes)
            }
            #expect(error?.code == .invalidSignature, "\(what)")
        }
        for count in [0, 63, 65, 72] {
            let error = #expect(throws: CryptoError.self) {
                try ECDSASignature(rawRepresentation: [UInt8](repeating: 1, count: count))
            }
            #expect(error?.code == .invalidSignature)
            #expect(error?.description.contains("64 bytes") == true)
        }
    }

    @Test("a signature made by the openssl command verifies, and ours verifies with the openssl command")
    func opensslInterop() async throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let message = Array("Herald interop message \u{1F514}".utf8)
        try scratch.write("message.bin", message)
        try await requireOpenSSL([
            "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", scratch.path("key.pem"),
        ])
        try await requireOpenSSL([
            "pkey", "-in", scratch.path("key.pem"), "-pubout", "-out", scratch.path("public.pem"),
        ])
        try await requireOpenSSL([
            "dgst", "-sha256", "-sign", scratch.path("key.pem"), "-out", scratch.path("openssl.sig"),
            scratch.path("message.bin"),
        ])

        let key = try P256PrivateKey(pemRepresentation: scratch.readText("key.pem"))
        let publicKey = try P256PublicKey(pemRepresentation: scratch.readText("public.pem"))
        #expect(key.publicKey == publicKey)
        let theirs = try ECDSASignature(derRepresentation: scratch.read("openssl.sig"))
        #expect(publicKey.isValidSignature(theirs, for: message))
        #expect(!publicKey.isValidSignature(theirs, for: message + [0]))
        // Through the JOSE raw form and back, as a JWT verifier would see it.
        #expect(
            publicKey.isValidSignature(try ECDSASignature(rawRepresentation: theirs.rawRepresentation), for: message)
        )

        let ours = try key.signature(for: message)
        try scratch.write("ours.sig", ours.derRepresentation)
        let verified = try await requireOpenSSL([
            "dgst", "-sha256", "-verify", scratch.path("public.pem"), "-signature", scratch.path("ours.sig"),
            scratch.path("message.bin"),
        ])
        #expect(verified.contains("Verified OK"))
    }
}
