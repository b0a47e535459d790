import Foundation
import HeraldCrypto

/// WebPush message encryption as a Mastodon server does it and decryption as the iOS
/// notification service extension does it, built on HeraldCrypto's primitives: RFC 8291
/// (`aes128gcm`, over RFC 8188) and the older draft (`aesgcm`, draft-ietf-webpush-encryption-04).
/// Test code only: the relay never decrypts.
enum WebPushCrypto {
    /// What the device keeps: its key pair and the 16-byte auth secret.
    struct Subscription {
        var privateKey = P256PrivateKey()
        var authSecret = SecureRandom.bytes(16)
        var publicKey: [UInt8] { privateKey.publicKey.x963Representation }
    }

    /// An `aesgcm` message: the body and the two headers that go with it.
    struct LegacyMessage {
        var body: [UInt8]
        var salt: [UInt8]
        var serverPublicKey: [UInt8]
    }

    // MARK: aes128gcm (RFC 8291 §3–§4)

    static func encryptAES128GCM(_ plaintext: [UInt8], for subscription: Subscription) throws -> [UInt8] {
        let server = P256PrivateKey()
        let salt = SecureRandom.bytes(16)
        let (key, nonce) = try aes128gcmKeys(
            secret: try server.sharedSecret(with: subscription.privateKey.publicKey),
            authSecret: subscription.authSecret,
            receiverPublic: subscription.publicKey,
            senderPublic: server.publicKey.x963Representation,
            salt: salt
        )
        let sealed = try AESGCM.seal(plaintext + [0x02], key: key, nonce: nonce)
        let recordSize = UInt32(4096)
        let header =
            salt + withUnsafeBytes(of: recordSize.bigEndian, Array.init) + [65] + server.publicKey.x963Representation
        return header + sealed.ciphertext + sealed.tag
    }

    static func decryptAES128GCM(_ body: [UInt8], with subscription: Subscription) throws -> [UInt8] {
        guard body.count > 86 + 16, body[20] == 65 else { throw CryptoFailure("not an aes128gcm body") }
        let salt = Array(body[0..<16])
        let senderPublic = Array(body[21..<86])
        let (key, nonce) = try aes128gcmKeys(
            secret: try subscription.privateKey.sharedSecret(with: P256PublicKey(x963Representation: senderPublic)),
            authSecret: subscription.authSecret,
            receiverPublic: subscription.publicKey,
            senderPublic: senderPublic,
            salt: salt
        )
        let record = Array(body[86...])
        var plaintext = try AESGCM.open(
            Array(record.dropLast(16)),
            tag: Array(record.suffix(16)),
            key: key,
            nonce: nonce
        )
        while plaintext.last == 0 { plaintext.removeLast() }
        guard plaintext.last == 0x02 else { throw CryptoFailure("missing the last-record delimiter") }
        plaintext.removeLast()
        return plaintext
    }

    private static func aes128gcmKeys(
        secret: [UInt8],
        authSecret: [UInt8],
        receiverPublic: [UInt8],
        senderPublic: [UInt8],
        salt: [UInt8]
    ) throws -> (key: [UInt8], nonce: [UInt8]) {
        let keyInfo = Array("WebPush: info".utf8) + [0] + receiverPublic + senderPublic
        let ikm = try HKDF.deriveKey(inputKeyMaterial: secret, salt: authSecret, info: keyInfo, outputByteCount: 32)
        let key = try HKDF.deriveKey(
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
        return (key, nonce)
    }

    // MARK: aesgcm (draft-ietf-webpush-encryption-04)

    static func encryptAESGCM(_ plaintext: [UInt8], for subscription: Subscription) throws -> LegacyMessage {
        let server = P256PrivateKey()
        let salt = SecureRandom.bytes(16)
        let (key, nonce) = try aesgcmKeys(
            secret: try server.sharedSecret(with: subscription.privateKey.publicKey),
            authSecret: subscription.authSecret,
            receiverPublic: subscription.publicKey,
            senderPublic: server.publicKey.x963Representation,
            salt: salt
        )
        let sealed = try AESGCM.seal([0, 0] + plaintext, key: key, nonce: nonce)
        return LegacyMessage(
            body: sealed.ciphertext + sealed.tag,
            salt: salt,
            serverPublicKey: server.publicKey.x963Representation
        )
    }

    static func decryptAESGCM(
        _ body: [UInt8],
        salt: [UInt8],
        serverPublicKey: [UInt8],
        with subscription: Subscription
    ) throws -> [UInt8] {
        let (key, nonce) = try aesgcmKeys(
            secret: try subscription.privateKey.sharedSecret(with: P256PublicKey(x963Representation: serverPublicKey)),
            authSecret: subscription.authSecret,
            receiverPublic: subscription.publicKey,
            senderPublic: serverPublicKey,
            salt: salt
        )
        let padded = try AESGCM.open(Array(body.dropLast(16)), tag: Array(body.suffix(16)), key: key, nonce: nonce)
        guard padded.count >= 2 else { throw CryptoFailure("record too short") }
        let padding = Int(padded[0]) << 8 | Int(padded[1])
        return Array(padded[(2 + padding)...])
    }

    private static func aesgcmKeys(
        secret: [UInt8],
        authSecret: [UInt8],
        receiverPublic: [UInt8],
        senderPublic: [UInt8],
        salt: [UInt8]
    ) throws -> (key: [UInt8], nonce: [UInt8]) {
        let ikm = try HKDF.deriveKey(
            inputKeyMaterial: secret,
            salt: authSecret,
            info: Array("Content-Encoding: auth".utf8) + [0],
            outputByteCount: 32
        )
        let context = Array("P-256".utf8) + [0, 0, 65] + receiverPublic + [0, 65] + senderPublic
        let key = try HKDF.deriveKey(
            inputKeyMaterial: ikm,
            salt: salt,
            info: Array("Content-Encoding: aesgcm".utf8) + [0] + context,
            outputByteCount: 16
        )
        let nonce = try HKDF.deriveKey(
            inputKeyMaterial: ikm,
            salt: salt,
            info: Array("Content-Encoding: nonce".utf8) + [0] + context,
            outputByteCount: 12
        )
        return (key, nonce)
    }

    // MARK: Encodings the extension reads

    static func urlSafeBase64(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
    }

    /// Decodes `m` (URL-safe alphabet, `=` padding) as the extension does.
    static func decodeM(_ text: String) -> [UInt8]? {
        Data(base64Encoded: text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/"))
            .map(Array.init)
    }

    struct CryptoFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
