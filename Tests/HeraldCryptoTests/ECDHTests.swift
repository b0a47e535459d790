import HeraldCrypto
import Testing

/// RFC 8291 ("Message Encryption for Web Push"), Appendix A: every input and intermediate value of
/// the worked example, base64url as the RFC prints them.
enum RFC8291 {
    static let plaintext = "When I grow up, I want to be a watermelon"
    static let asPublic = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
    static let asPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
    static let uaPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let uaPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
    static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
    static let authSecret = "BTBZMqHH6r4Tts7J_aSIgg"
    static let ecdhSecret = "kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs"
    static let prkKey = "Snr3JMxaHVDXHWJn5wdC52WjpCtd2EIEGBykDcZW32k"
    static let keyInfo =
        "V2ViUHVzaDogaW5mbwAEJXGyvs3942BVGq8e0PTNNmwRzr5VX4m8t7GGpTM5FzFo7OLr4BhZe9MEebhuPI-OztV3ylkYfpJGmQ22ggCLDgT-"
        + "M_SrDepxkU21WCP3O1SUj0EwbZIHMtu5pZpTKGSCIA5Zent7wmC6HCJ5mFgJkuk5cwAvMBKiiujwa7t45ewP"
    static let ikm = "S4lYMb_L0FxCeq0WhDx813KgSYqU26kOyzWUdsXYyrg"
    static let prk = "09_eUZGrsvxChDCGRCdkLiDXrReGOEVeSCdCcPBSJSc"
    static let cek = "oIhVW04MRdy2XN9CiKLxTg"
    static let nonce = "4h_95klXJ5E_qnoN"
    /// The encrypted record: ciphertext || tag.
    static let record = "8pfeW0KbunFT06SuDKoJH9Ql87S1QUrdirN6GcG7sFz1y1sqLgVi1VhjVkHsUoEsbI_0LpXMuGvnzQ"
    /// The whole aes128gcm message body: header (salt, record size, key id) || record.
    static let body =
        "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_"
        + "yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
}

@Suite("ECDH P-256 and the RFC 8291 WebPush example")
struct ECDHTests {
    @Test("both sides derive the same 32-byte secret, which a third key does not")
    func agreement() throws {
        let alice = P256PrivateKey()
        let bob = P256PrivateKey()
        let aliceSecret = try alice.sharedSecret(with: bob.publicKey)
        let bobSecret = try bob.sharedSecret(with: alice.publicKey)
        #expect(aliceSecret.count == 32)
        #expect(aliceSecret == bobSecret)
        #expect(try P256PrivateKey().sharedSecret(with: bob.publicKey) != aliceSecret)
    }

    @Test("RFC 8291 Appendix A: raw private keys give the published public keys and ECDH secret")
    func rfc8291Keys() throws {
        let applicationServer = try P256PrivateKey(rawRepresentation: base64URL(RFC8291.asPrivate))
        let userAgent = try P256PrivateKey(rawRepresentation: base64URL(RFC8291.uaPrivate))
        #expect(applicationServer.publicKey.x963Representation == (try base64URL(RFC8291.asPublic)))
        #expect(userAgent.publicKey.x963Representation == (try base64URL(RFC8291.uaPublic)))

        let uaPublic = try P256PublicKey(x963Representation: base64URL(RFC8291.uaPublic))
        let asPublic = try P256PublicKey(x963Representation: base64URL(RFC8291.asPublic))
        let secret = try applicationServer.sharedSecret(with: uaPublic)
        #expect(secret == (try base64URL(RFC8291.ecdhSecret)))
        #expect(try userAgent.sharedSecret(with: asPublic) == secret)
    }

    @Test("RFC 8291 Appendix A: HKDF gives the published PRK_key, IKM, PRK, CEK and nonce, and AES-128-GCM the record")
    func rfc8291KeySchedule() throws {
        let ecdhSecret = try base64URL(RFC8291.ecdhSecret)
        let authSecret = try base64URL(RFC8291.authSecret)
        let salt = try base64URL(RFC8291.salt)
        let uaPublic = try base64URL(RFC8291.uaPublic)
        let asPublic = try base64URL(RFC8291.asPublic)

        // Section 3.3: key_info = "WebPush: info" || 0x00 || ua_public || as_public.
        let keyInfo = Array("WebPush: info".utf8) + [0] + uaPublic + asPublic
        #expect(keyInfo == (try base64URL(RFC8291.keyInfo)))
        // PRK_key = HMAC-SHA-256(auth_secret, ecdh_secret), the HKDF extract step.
        #expect(HMAC256.authenticationCode(for: ecdhSecret, key: authSecret) == (try base64URL(RFC8291.prkKey)))
        let ikm = try HKDF.deriveKey(inputKeyMaterial: ecdhSecret, salt: authSecret, info: keyInfo, outputByteCount: 32)
        #expect(ikm == (try base64URL(RFC8291.ikm)))

        // RFC 8188 content encryption keys.
        #expect(HMAC256.authenticationCode(for: ikm, key: salt) == (try base64URL(RFC8291.prk)))
        let cek = try HKDF.deriveKey(
            inputKeyMaterial: ikm,
            salt: salt,
            info: Array("Content-Encoding: aes128gcm".utf8) + [0],
            outputByteCount: 16
        )
        let nonce = try HKDF.deriveKey(
            inputKeyMaterial: ikm,
            salt: salt,
            info: Array("Content-Encoding: nonce".utf8) + [0],
            outputByteCount: 12
        )
        #expect(cek == (try base64URL(RFC8291.cek)))
        #expect(nonce == (try base64URL(RFC8291.nonce)))

        // The single record: plaintext || 0x02 (last-record delimiter), sealed with CEK and nonce.
        let sealed = try AESGCM.seal(Array(RFC8291.plaintext.utf8) + [0x02], key: cek, nonce: nonce)
        #expect(sealed.ciphertext + sealed.tag == (try base64URL(RFC8291.record)))
        let header = salt + [0x00, 0x00, 0x10, 0x00] + [UInt8(asPublic.count)] + asPublic
        #expect(header + sealed.ciphertext + sealed.tag == (try base64URL(RFC8291.body)))

        let record = try base64URL(RFC8291.record)
        let opened = try AESGCM.open(Array(record.dropLast(16)), tag: Array(record.suffix(16)), key: cek, nonce: nonce)
        #expect(opened == Array(RFC8291.plaintext.utf8) + [0x02])
    }
}
