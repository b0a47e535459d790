import HeraldCrypto
import Testing

@Suite("SelfSignedCertificate")
struct SelfSignedCertificateTests {
    @Test("the openssl command reads the certificate, its names, key and extensions")
    func parsesWithOpenSSL() async throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let key = P256PrivateKey()
        let certificate = try SelfSignedCertificate.generate(
            commonName: "Herald Test CA",
            subjectAlternativeNames: ["localhost", "127.0.0.1", "::1", "*.herald.test"],
            key: key
        )
        #expect(certificate.certificatePEM.hasPrefix("-----BEGIN CERTIFICATE-----\n"))
        #expect(certificate.privateKeyPEM == key.pemRepresentation)
        try scratch.write("certificate.pem", certificate.certificatePEM)

        let text = try await requireOpenSSL(["x509", "-in", scratch.path("certificate.pem"), "-noout", "-text"])
        #expect(text.contains("Version: 3 (0x2)"))
        #expect(text.contains("Subject: CN = Herald Test CA"))
        #expect(text.contains("Issuer: CN = Herald Test CA"))
        #expect(text.contains("Signature Algorithm: ecdsa-with-SHA256"))
        #expect(text.contains("NIST CURVE: P-256"))
        #expect(text.contains("DNS:localhost"))
        #expect(text.contains("IP Address:127.0.0.1"))
        #expect(text.contains("IP Address:0:0:0:0:0:0:0:1"))
        #expect(text.contains("DNS:*.herald.test"))
        #expect(text.contains("CA:TRUE"))
        #expect(text.contains("TLS Web Server Authentication"))
        #expect(text.contains("Subject Key Identifier"))

        // The certificate carries exactly our public key.
        let publicKeyPEM = try await requireOpenSSL([
            "x509", "-in", scratch.path("certificate.pem"), "-noout", "-pubkey",
        ])
        #expect(try P256PublicKey(pemRepresentation: publicKeyPEM) == key.publicKey)
    }

    @Test("the certificate verifies as its own root for TLS server use, for its names only")
    func verifiesWithOpenSSL() async throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let certificate = try SelfSignedCertificate.generate(
            commonName: "Herald APNs simulator",
            subjectAlternativeNames: ["localhost", "127.0.0.1"],
            key: P256PrivateKey()
        )
        try scratch.write("certificate.pem", certificate.certificatePEM)
        let path = scratch.path("certificate.pem")
        let base = ["verify", "-CAfile", path, "-purpose", "sslserver"]

        #expect(try await requireOpenSSL(base + ["-verify_hostname", "localhost", path]).contains("OK"))
        #expect(try await requireOpenSSL(base + ["-verify_ip", "127.0.0.1", path]).contains("OK"))
        #expect(try await runOpenSSL(base + ["-verify_hostname", "apns.example.com", path]).status != 0)
        #expect(try await runOpenSSL(base + ["-verify_ip", "10.0.0.1", path]).status != 0)
        // Another certificate is not trusted by this one.
        let other = try SelfSignedCertificate.generate(
            commonName: "Other",
            subjectAlternativeNames: ["localhost"],
            key: P256PrivateKey()
        )
        try scratch.write("other.pem", other.certificatePEM)
        #expect(try await runOpenSSL(base + [scratch.path("other.pem")]).status != 0)
    }

    @Test("the validity period is what was asked for")
    func validity() async throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let certificate = try SelfSignedCertificate.generate(
            commonName: "Short",
            subjectAlternativeNames: ["localhost"],
            key: P256PrivateKey(),
            validity: .seconds(3_600)
        )
        try scratch.write("certificate.pem", certificate.certificatePEM)
        let path = scratch.path("certificate.pem")
        // Valid for the next minute, expired within two hours.
        #expect(try await runOpenSSL(["x509", "-in", path, "-noout", "-checkend", "60"]).status == 0)
        #expect(try await runOpenSSL(["x509", "-in", path, "-noout", "-checkend", "7200"]).status != 0)
    }

    @Test("bad names and validity are rejected; the description hides the private key")
    func rejectsBadInput() throws {
        let key = P256PrivateKey()
        let badNames = ["", "bad name", "evil,DNS:attacker.example", "-leading.example", "a..b", "ünïcode.example"]
        for name in badNames {
            let error = #expect(throws: CryptoError.self, "\(name)") {
                try SelfSignedCertificate.generate(commonName: "x", subjectAlternativeNames: [name], key: key)
            }
            #expect(error?.code == .invalidArgument, "\(name)")
        }
        for commonName in ["", String(repeating: "x", count: 65)] {
            let error = #expect(throws: CryptoError.self) {
                try SelfSignedCertificate.generate(commonName: commonName, subjectAlternativeNames: [], key: key)
            }
            #expect(error?.code == .invalidArgument)
        }
        let error = #expect(throws: CryptoError.self) {
            try SelfSignedCertificate.generate(commonName: "x", subjectAlternativeNames: [], key: key, validity: .zero)
        }
        #expect(error?.code == .invalidArgument)

        let certificate = try SelfSignedCertificate.generate(commonName: "x", subjectAlternativeNames: [], key: key)
        #expect(!certificate.description.contains("PRIVATE KEY"))
        #expect(!"\(certificate)".contains(certificate.privateKeyPEM))
    }
}
