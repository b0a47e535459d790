import APNs
import Foundation
import HTTPRouting
import HTTPServer
import HeraldCore
import HeraldCrypto
import Testing

@testable import Relay

@Suite("WebPush → APNs translation (RELAY.md)")
struct WebPushTranslationTests {
    let translation = WebPushTranslation(topic: "org.example.app")
    let token = String(repeating: "AbCd", count: 16)
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func request(
        query: String = "",
        headers: [(String, String)] = [("Content-Encoding", "aes128gcm")],
        body: [UInt8] = [0xFB, 0xFF, 0x00, 0x3E]
    ) -> HTTPRequest {
        var request = HTTPRequest(method: "POST", path: "/push/\(token)/ID" + query)
        request.headers = HTTPHeaders(headers)
        request.body = body
        return request
    }

    func translate(_ request: HTTPRequest, rawToken: String? = nil, rawID: String = "ID") throws -> RelayedPush {
        try translation.translate(rawToken: rawToken ?? token, rawID: rawID, request: request, now: now)
    }

    func rejection(_ body: () throws -> RelayedPush) -> RelayRejection? {
        do {
            _ = try body()
            return nil
        } catch let error as RelayRejection {
            return error
        } catch {
            return nil
        }
    }

    func json(_ push: RelayedPush) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(push.request.payload)) as? [String: Any])
    }

    @Test func aes128gcmBecomesTheExtensionsPayload() throws {
        let push = try translate(request(), rawID: "0FE8C1A6-4B7E-4F7A-9E2A-0D3C1B6A9F10")
        #expect(push.environment == .production)
        #expect(push.encoding == "aes128gcm")
        #expect(push.request.deviceToken == token.lowercased())
        #expect(push.request.pushType == .alert)
        #expect(push.request.resolvedTopic == "org.example.app")
        #expect(push.request.expiration == .omitted)
        #expect(push.request.priority == nil)
        #expect(push.request.collapseID == nil)
        let text = String(decoding: push.request.payload, as: UTF8.self)
        #expect(
            text == #"{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"#
                + #""e":"aes128gcm","i":"0FE8C1A6-4B7E-4F7A-9E2A-0D3C1B6A9F10","m":"-_8APg=="}"#
        )
    }

    @Test func idIsPercentDecodedVerbatimAndInvalidUTF8IsRejected() throws {
        let push = try translate(request(), rawID: "a%20b%2Fc%C3%A9")
        #expect(try json(push)["i"] as? String == "a b/cé")
        let error = rejection { try translate(request(), rawID: "bad%FF") }
        #expect(error?.status == 400)
        #expect(error?.code == "invalid_id")
    }

    @Test(arguments: [
        "abc", String(repeating: "a", count: 63), String(repeating: "g", count: 64),
        String(repeating: "a", count: 202), "",
    ])
    func badDeviceTokensAre400(_ bad: String) {
        let error = rejection { try translate(request(), rawToken: bad) }
        #expect(error?.status == 400)
        #expect(error?.code == "invalid_device_token")
    }

    @Test func longTokensUpTo200AreAccepted() throws {
        let long = String(repeating: "AB", count: 100)
        #expect(try translate(request(), rawToken: long).request.deviceToken == long.lowercased())
    }

    @Test func sandboxOnlyForTheExactValueTrueAndTheLastOccurrenceWins() throws {
        #expect(try translate(request(query: "?sandbox=true")).environment == .sandbox)
        #expect(try translate(request(query: "?sandbox=True")).environment == .production)
        #expect(try translate(request(query: "?sandbox=1")).environment == .production)
        #expect(try translate(request(query: "?sandbox=true&sandbox=false")).environment == .production)
        #expect(try translate(request(query: "?sandbox=false&sandbox=true")).environment == .sandbox)
        #expect(try translate(request(query: "?token=x&i=y")).request.deviceToken == token.lowercased())
    }

    @Test(arguments: [
        [], [("Content-Encoding", "gzip")], [("Content-Encoding", "aes128gcm, aesgcm")],
        [("Content-Encoding", "aes128gcm"), ("Content-Encoding", "aes128gcm")],
    ])
    func unsupportedEncodingsAre415(_ headers: [(String, String)]) {
        let error = rejection { try translate(request(headers: headers)) }
        #expect(error?.status == 415)
    }

    @Test func encodingIsCaseInsensitiveAndTrimmed() throws {
        let push = try translate(request(headers: [("Content-Encoding", "  AES128GCM ")]))
        #expect(try json(push)["e"] as? String == "aes128gcm")
    }

    @Test func aesgcmCarriesBareSaltAndDH() throws {
        let push = try translate(
            request(headers: [
                ("Content-Encoding", "aesgcm"),
                ("Encryption", "salt=\"c2FsdA\"; rs=4096"),
                ("Crypto-Key", "p256ecdsa=QUJD, dh=BPub_key-1"),
            ])
        )
        let body = try json(push)
        #expect(body["e"] as? String == "aesgcm")
        #expect(body["s"] as? String == "c2FsdA")
        #expect(body["k"] as? String == "BPub_key-1")
    }

    @Test func aesgcmWithoutItsHeadersIs400() {
        let missingSalt = rejection {
            try translate(request(headers: [("Content-Encoding", "aesgcm"), ("Crypto-Key", "dh=x")]))
        }
        #expect(missingSalt?.status == 400)
        #expect(missingSalt?.code == "missing_salt")
        let missingDH = rejection {
            try translate(
                request(headers: [
                    ("Content-Encoding", "aesgcm"), ("Encryption", "salt=a"), ("Crypto-Key", "p256ecdsa=x"),
                ])
            )
        }
        #expect(missingDH?.status == 400)
        #expect(missingDH?.code == "missing_dh")
    }

    @Test func aes128gcmIgnoresEncryptionHeaders() throws {
        let push = try translate(
            request(headers: [("Content-Encoding", "aes128gcm"), ("Encryption", "salt=a"), ("Crypto-Key", "dh=b")])
        )
        let body = try json(push)
        #expect(body["s"] == nil)
        #expect(body["k"] == nil)
    }

    @Test func ttlUrgencyAndTopicMapOntoAPNsHeaders() throws {
        let push = try translate(
            request(headers: [
                ("Content-Encoding", "aes128gcm"), ("TTL", "3600"), ("Urgency", "low"), ("Topic", "thread-1"),
            ])
        )
        #expect(push.request.expiration == .at(now.addingTimeInterval(3600)))
        #expect(push.request.priority == .consideringDevicePower)
        #expect(push.request.collapseID == "thread-1")

        let immediate = try translate(
            request(headers: [("Content-Encoding", "aes128gcm"), ("TTL", "0"), ("Urgency", "high")])
        )
        #expect(immediate.request.expiration == .immediately)
        #expect(immediate.request.priority == .immediately)

        let veryLow = try translate(request(headers: [("Content-Encoding", "aes128gcm"), ("Urgency", "very-low")]))
        #expect(veryLow.request.priority == .consideringDevicePower)
        let normal = try translate(request(headers: [("Content-Encoding", "aes128gcm"), ("Urgency", "normal")]))
        #expect(normal.request.priority == .immediately)
        let shouted = try translate(request(headers: [("Content-Encoding", "aes128gcm"), ("Urgency", " Very-LOW ")]))
        #expect(shouted.request.priority == .consideringDevicePower)
        let unknown = try translate(request(headers: [("Content-Encoding", "aes128gcm"), ("Urgency", "urgent")]))
        #expect(unknown.request.priority == nil)

        let longTopic = try translate(
            request(headers: [("Content-Encoding", "aes128gcm"), ("Topic", String(repeating: "t", count: 65))])
        )
        #expect(longTopic.request.collapseID == nil)
    }

    @Test func bodiesOver4096Are413AndAt4096Pass() throws {
        let error = rejection { try translate(request(body: Array(repeating: 1, count: 4097))) }
        #expect(error?.status == 413)
        let push = try translate(request(body: Array(repeating: 1, count: 4096)))
        #expect(push.request.payload.count > 4096, "a full 4096-byte body cannot fit APNs' limit once base64'd")
    }

    @Test func mIsURLSafeBase64WithPadding() throws {
        let body: [UInt8] = (0...255).map { UInt8($0) }
        let push = try translate(request(body: body))
        let m = try #require(try json(push)["m"] as? String)
        #expect(!m.contains("+") && !m.contains("/"))
        let standard = m.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        #expect(Data(base64Encoded: standard).map(Array.init) == body)
        #expect(try translate(request(body: [1])).request.payload.count > 0)
        #expect(try json(try translate(request(body: [1])))["m"] as? String == "AQ==")
    }

    /// What the payload was before it was built by hand; the hand-built bytes must stay identical.
    struct EncoderPayload: Encodable {
        struct APS: Encodable {
            struct Alert: Encodable {
                var locKey = "apns-default-message"
                enum CodingKeys: String, CodingKey { case locKey = "loc-key" }
            }
            var alert = Alert()
            var mutableContent = 1
            enum CodingKeys: String, CodingKey {
                case alert
                case mutableContent = "mutable-content"
            }
        }
        var aps = APS()
        var e: String
        var i: String
        var m: String
        var s: String?
        var k: String?
    }

    @Test(arguments: [
        "0FE8C1A6-4B7E-4F7A-9E2A-0D3C1B6A9F10", "", "a b/cé", "quote\"back\\slash",
        String((0..<0x20).map { Character(Unicode.Scalar(UInt8($0))) }) + "\u{7F}\u{2028}😀<&>'",
    ])
    func payloadBytesMatchJSONEncoder(_ id: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for length in [0, 1, 2, 3, 4, 5, 300] {
            let body = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 251) }
            let m = Data(body).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            #expect(Base64URL.encode(body, padded: true) == m)
            let plain = EncoderPayload(e: "aes128gcm", i: id, m: m)
            #expect(
                WebPushTranslation.payload(encoding: "aes128gcm", id: id, body: body, salt: nil, dh: nil)
                    == Array(try encoder.encode(plain))
            )
            let withKeys = EncoderPayload(e: "aesgcm", i: id, m: m, s: "sa\"lt", k: "d/h")
            #expect(
                WebPushTranslation.payload(encoding: "aesgcm", id: id, body: body, salt: "sa\"lt", dh: "d/h")
                    == Array(try encoder.encode(withKeys))
            )
        }
    }

    @Test(arguments: ["aes128gcm", " aes128gcm", "aes128gcm\t", "\u{A0}aes128gcm\u{3000}", "", " ", "é "])
    func trimmingMatchesFoundation(_ value: String) {
        #expect(value.trimmingSpaces() == value.trimmingCharacters(in: .whitespaces))
    }
}
