import APNs
import APNsSimulator
import Foundation
import HeraldCore
import HeraldCrypto
import Testing

/// Real WebPush ciphertext through the relay: what reaches APNs decrypts to what the server sent.
@Suite("Relayed ciphertext decrypts on the device", .serialized)
struct RelayCiphertextTests {
    let message = Array(
        #"{"title":"New follower","body":"@alice@example.social followed you","preferred_locale":"en"}"#.utf8
    )

    @Test func cryptoRoundTripsLocally() throws {
        let subscription = WebPushCrypto.Subscription()
        let body = try WebPushCrypto.encryptAES128GCM(message, for: subscription)
        #expect(try WebPushCrypto.decryptAES128GCM(body, with: subscription) == message)
        let legacy = try WebPushCrypto.encryptAESGCM(message, for: subscription)
        let decrypted = try WebPushCrypto.decryptAESGCM(
            legacy.body,
            salt: legacy.salt,
            serverPublicKey: legacy.serverPublicKey,
            with: subscription
        )
        #expect(decrypted == message)
        var tampered = body
        tampered[tampered.count - 1] ^= 1
        #expect(throws: (any Error).self) { try WebPushCrypto.decryptAES128GCM(tampered, with: subscription) }
    }

    @Test func aes128gcmDecryptsFromTheAPNsPayload() async throws {
        let subscription = WebPushCrypto.Subscription()
        let body = try WebPushCrypto.encryptAES128GCM(message, for: subscription)
        try await RelayHarness.with { relay in
            let token = randomToken()
            #expect(try await relay.post("/push/\(token)/1", body: body).status == 202)
            let delivery = try #require(try await relay.deliveries(token: token).first)
            let payload = try #require(delivery.payloadJSON?.objectValue)
            #expect(payload["e"] == .string("aes128gcm"))
            let m = try #require(payload["m"]?.stringValue)
            let received = try #require(WebPushCrypto.decodeM(m))
            #expect(try WebPushCrypto.decryptAES128GCM(received, with: subscription) == message)
        }
    }

    @Test func aesgcmDecryptsFromTheAPNsPayload() async throws {
        let subscription = WebPushCrypto.Subscription()
        let legacy = try WebPushCrypto.encryptAESGCM(message, for: subscription)
        try await RelayHarness.with { relay in
            let token = randomToken()
            let answer = try await relay.post(
                "/push/\(token)/1",
                headers: [
                    "Content-Encoding": "aesgcm",
                    "Encryption": "salt=\(Base64URL.encode(legacy.salt))",
                    "Crypto-Key": "dh=\(Base64URL.encode(legacy.serverPublicKey));p256ecdsa=BVapidKey",
                ],
                body: legacy.body
            )
            #expect(answer.status == 202)
            let delivery = try #require(try await relay.deliveries(token: token).first)
            let payload = try #require(delivery.payloadJSON?.objectValue)
            let m = try #require(payload["m"]?.stringValue)
            let s = try #require(payload["s"]?.stringValue)
            let k = try #require(payload["k"]?.stringValue)
            let received = try #require(WebPushCrypto.decodeM(m))
            let salt = try #require(Base64URL.decode(s))
            let dh = try #require(Base64URL.decode(k))
            let decrypted = try WebPushCrypto.decryptAESGCM(
                received,
                salt: salt,
                serverPublicKey: dh,
                with: subscription
            )
            #expect(decrypted == message)
        }
    }
}
