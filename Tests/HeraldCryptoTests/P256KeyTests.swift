import HeraldCrypto
import Testing

@Suite("P-256 keys: PEM, raw and X9.63 forms")
struct P256KeyTests {
    @Test("PKCS#8, SEC1 and SPKI from the openssl command parse to the same key")
    func pemFormats() async throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        // SEC1 ("EC PRIVATE KEY"), then the same key as PKCS#8 ("PRIVATE KEY", Apple's .p8 form) and SPKI.
        try await requireOpenSSL([
            "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", scratch.path("sec1.pem"),
        ])
        try await requireOpenSSL([
            "pkcs8", "-topk8", "-nocrypt", "-in", scratch.path("sec1.pem"), "-out", scratch.path("pkcs8.pem"),
        ])
        try await requireOpenSSL(["ec", "-in", scratch.path("sec1.pem"), "-pubout", "-out", scratch.path("spki.pem")])
        let sec1Text = try scratch.readText("sec1.pem")
        let pkcs8Text = try scratch.readText("pkcs8.pem")
        #expect(sec1Text.hasPrefix("-----BEGIN EC PRIVATE KEY-----"))
        #expect(pkcs8Text.hasPrefix("-----BEGIN PRIVATE KEY-----"))

        let sec1 = try P256PrivateKey(pemRepresentation: sec1Text)
        let pkcs8 = try P256PrivateKey(pemRepresentation: pkcs8Text)
        let spki = try P256PublicKey(pemRepresentation: scratch.readText("spki.pem"))
        #expect(sec1.rawRepresentation == pkcs8.rawRepresentation)
        #expect(sec1.publicKey == spki)
        #expect(pkcs8.publicKey == spki)

        // Our PKCS#8 output is what openssl itself writes for the key.
        #expect(pkcs8.pemRepresentation == pkcs8Text)
        #expect(spki.pemRepresentation == (try scratch.readText("spki.pem")))

        // `openssl ecparam -genkey` without -noout puts an EC PARAMETERS block before the key.
        try await requireOpenSSL([
            "ecparam", "-name", "prime256v1", "-genkey", "-out", scratch.path("with-parameters.pem"),
        ])
        let withParameters = try scratch.readText("with-parameters.pem")
        #expect(withParameters.hasPrefix("-----BEGIN EC PARAMETERS-----"))
        #expect(try P256PrivateKey(pemRepresentation: withParameters).rawRepresentation.count == 32)

        // And the openssl command reads what we write.
        try scratch.write("ours.pem", sec1.pemRepresentation)
        let text = try await requireOpenSSL(["pkey", "-in", scratch.path("ours.pem"), "-noout", "-text"])
        #expect(text.contains("NIST CURVE: P-256"))
    }

    @Test("PEM pasted with indentation, CRLF line ends or escaped newlines parses")
    func pastedPEM() throws {
        let key = P256PrivateKey()
        let pem = key.pemRepresentation
        let variants = [
            "\n  \(pem)\n\n",
            pem.split(separator: "\n").map { "    \($0)" }.joined(separator: "\n"),
            pem.replacing("\n", with: "\r\n"),
            pem.replacing("\n", with: "\\n"),
        ]
        for text in variants {
            #expect(
                try P256PrivateKey(pemRepresentation: text).rawRepresentation == key.rawRepresentation,
                "\(text.count)"
            )
        }
        let publicPEM = key.publicKey.pemRepresentation.replacing("\n", with: "\r\n")
        #expect(try P256PublicKey(pemRepresentation: "  " + publicPEM) == key.publicKey)
    }

    @Test("generated keys round-trip through every representation")
    func roundTrips() throws {
        let key = P256PrivateKey()
        #expect(key.rawRepresentation.count == 32)
        #expect(key.pemRepresentation.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        #expect(key.publicKey.pemRepresentation.hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
        #expect(key.publicKey.x963Representation.count == 65)
        #expect(key.publicKey.x963Representation.first == 0x04)

        let fromRaw = try P256PrivateKey(rawRepresentation: key.rawRepresentation)
        let fromPEM = try P256PrivateKey(pemRepresentation: key.pemRepresentation)
        #expect(fromRaw.publicKey == key.publicKey)
        #expect(fromPEM.publicKey == key.publicKey)
        #expect(fromPEM.rawRepresentation == key.rawRepresentation)
        #expect(try P256PublicKey(x963Representation: key.publicKey.x963Representation) == key.publicKey)
        #expect(try P256PublicKey(pemRepresentation: key.publicKey.pemRepresentation) == key.publicKey)
        #expect(P256PrivateKey().publicKey != key.publicKey)

        // A key rebuilt from its raw scalar signs for the original public key.
        let signature = try fromRaw.signature(for: [42])
        #expect(key.publicKey.isValidSignature(signature, for: [42]))
    }

    @Test("descriptions never show the private key")
    func descriptionsAreRedacted() throws {
        let key = P256PrivateKey()
        let secretForms = [hexString(key.rawRepresentation), Base64URL.encode(key.rawRepresentation)]
        for text in [key.description, String(describing: key), String(reflecting: key)] {
            for secret in secretForms {
                #expect(!text.contains(secret))
            }
        }
        let error = #expect(throws: CryptoError.self) {
            // A PEM block whose body is this key's scalar, mislabelled: unreadable.
            try P256PrivateKey(
                pemRepresentation:
                    "-----BEGIN PRIVATE KEY-----\n\(Base64URL.encode(key.rawRepresentation))\n-----END PRIVATE KEY-----\n"
            )
        }
        for secret in secretForms {
            #expect(error?.description.contains(secret) == false)
        }
    }

    @Test("keys on other curves and of other types are rejected, naming what was found")
    func rejectsOtherKeys() async throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        try await requireOpenSSL([
            "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384", "-out", scratch.path("p384.pem"),
        ])
        try await requireOpenSSL([
            "pkey", "-in", scratch.path("p384.pem"), "-pubout", "-out", scratch.path("p384-public.pem"),
        ])
        try await requireOpenSSL(["ec", "-in", scratch.path("p384.pem"), "-out", scratch.path("p384-sec1.pem")])
        try await requireOpenSSL(["genpkey", "-algorithm", "ED25519", "-out", scratch.path("ed25519.pem")])

        for file in ["p384.pem", "p384-sec1.pem"] {
            let error = #expect(throws: CryptoError.self, "\(file)") {
                try P256PrivateKey(pemRepresentation: scratch.readText(file))
            }
            #expect(error?.code == .unsupportedKey)
            #expect(error?.description.contains("secp384r1") == true, "\(String(describing: error))")
            #expect(error?.description.contains("P-256") == true)
        }
        let publicError = #expect(throws: CryptoError.self) {
            try P256PublicKey(pemRepresentation: scratch.readText("p384-public.pem"))
        }
        #expect(publicError?.code == .unsupportedKey)
        #expect(publicError?.description.contains("secp384r1") == true)

        let edError = #expect(throws: CryptoError.self) {
            try P256PrivateKey(pemRepresentation: scratch.readText("ed25519.pem"))
        }
        #expect(edError?.code == .unsupportedKey)
        #expect(edError?.description.contains("ED25519") == true, "\(String(describing: edError))")
    }

    @Test("encrypted private keys are rejected without prompting for a password")
    func rejectsEncryptedKeys() async throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        try await requireOpenSSL([
            "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", scratch.path("plain.pem"),
        ])
        try await requireOpenSSL([
            "pkcs8", "-topk8", "-in", scratch.path("plain.pem"), "-passout", "pass:secret", "-out",
            scratch.path("encrypted.pem"),
        ])
        let error = #expect(throws: CryptoError.self) {
            try P256PrivateKey(pemRepresentation: scratch.readText("encrypted.pem"))
        }
        #expect(error?.code == .unsupportedKey)
        #expect(error?.description.contains("encrypted") == true)
    }

    @Test("garbage is rejected with a clear error")
    func rejectsGarbage() {
        let privateInputs = [
            "",
            "hello",
            "-----BEGIN PRIVATE KEY-----\nnot base64 at all!\n-----END PRIVATE KEY-----\n",
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
            RFC6979.publicKeyPEM,
        ]
        for input in privateInputs {
            let error = #expect(throws: CryptoError.self, "\(input)") { try P256PrivateKey(pemRepresentation: input) }
            #expect(error?.code == .invalidKey, "\(input)")
            #expect(error?.description.contains("BEGIN PRIVATE KEY") == true, "\(String(describing: error))")
        }
        let publicInputs = ["", "garbage", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"]
        for input in publicInputs {
            let error = #expect(throws: CryptoError.self, "\(input)") { try P256PublicKey(pemRepresentation: input) }
            #expect(error?.code == .invalidKey, "\(input)")
        }
    }

    @Test("invalid raw private scalars are rejected")
    func rejectsBadScalars() {
        let order = hex("FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551")
        let inputs: [(String, [UInt8])] = [
            ("empty", []),
            ("31 bytes", [UInt8](repeating: 1, count: 31)),
            ("33 bytes", [UInt8](repeating: 1, count: 33)),
            ("zero", [UInt8](repeating: 0, count: 32)),
            ("the group order", order),
            ("all ones", [UInt8](repeating: 0xFF, count: 32)),
        ]
        for (what, bytes) in inputs {
            let error = #expect(throws: CryptoError.self, "\(what)") { try P256PrivateKey(rawRepresentation: bytes) }
            #expect(error?.code == .invalidKey, "\(what)")
        }
        // n - 1 is the largest valid scalar.
        var largest = order
        largest[31] -= 1
        #expect(throws: Never.self) { try P256PrivateKey(rawRepresentation: largest) }
    }

    @Test("invalid public points are rejected")
    func rejectsBadPoints() throws {
        let valid = P256PrivateKey().publicKey.x963Representation
        var offCurve = valid
        offCurve[64] ^= 0x01
        let compressed = [UInt8(0x02 | (valid[64] & 1))] + valid[1...32]
        let inputs: [(String, [UInt8])] = [
            ("empty", []),
            ("compressed", compressed),
            ("wrong prefix", [0x05] + valid.dropFirst()),
            ("off the curve", offCurve),
            ("zero point", [0x04] + [UInt8](repeating: 0, count: 64)),
            ("too long", valid + [0]),
        ]
        for (what, bytes) in inputs {
            let error = #expect(throws: CryptoError.self, "\(what)") { try P256PublicKey(x963Representation: bytes) }
            #expect(error?.code == .invalidKey, "\(what)")
        }
    }
}
