import Foundation
import HeraldCrypto
import Testing

@Suite("Base64URL")
struct Base64URLTests {
    // RFC 4648 §10 test vectors, unpadded.
    @Test(
        arguments: [
            ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ]
    )
    func rfc4648Vectors(text: String, encoded: String) {
        #expect(Base64URL.encode(Array(text.utf8)) == encoded)
        #expect(Base64URL.decode(encoded) == Array(text.utf8))
    }

    @Test("uses - and _ where standard base64 uses + and /")
    func urlSafeAlphabet() {
        let bytes: [UInt8] = [0xFB, 0xFF, 0xBF]
        #expect(Data(bytes).base64EncodedString() == "+/+/")
        #expect(Base64URL.encode(bytes) == "-_-_")
        #expect(Base64URL.decode("-_-_") == bytes)
        #expect(Base64URL.encode([0xFF]) == "_w")
    }

    @Test("decoding accepts input with or without padding")
    func paddingTolerance() {
        #expect(Base64URL.decode("Zg") == Array("f".utf8))
        #expect(Base64URL.decode("Zg==") == Array("f".utf8))
        #expect(Base64URL.decode("Zm8") == Array("fo".utf8))
        #expect(Base64URL.decode("Zm8=") == Array("fo".utf8))
        #expect(Base64URL.decode("Zm9v") == Array("foo".utf8))
        #expect(Base64URL.decode("") == [])
    }

    @Test(
        "decoding rejects invalid input",
        arguments: [
            "Zm9vY",  // a length no encoding has
            "Zg=",  // too little padding
            "Zg===",  // too much padding
            "Zm9v=",  // padding where none belongs
            "Z=g=",  // data after padding
            "+/+/",  // standard alphabet
            "Zm 9v",  // whitespace
            "Zm9v\n",
            "Zm9v!",
            "Zm9vä",
        ]
    )
    func rejectsInvalid(text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    @Test("every length round-trips")
    func roundTrips() {
        for count in 0...67 {
            let bytes = SecureRandom.bytes(count)
            let encoded = Base64URL.encode(bytes)
            #expect(!encoded.contains("="))
            #expect(!encoded.contains("+"))
            #expect(!encoded.contains("/"))
            #expect(Base64URL.decode(encoded) == bytes)
            let padded = encoded + String(repeating: "=", count: (4 - encoded.count % 4) % 4)
            #expect(Base64URL.decode(padded) == bytes)
        }
    }

    // RFC 4648 §10 test vectors, padded, as the relay's payload carries them.
    @Test(
        arguments: [
            ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ]
    )
    func paddedVectors(text: String, encoded: String) {
        #expect(Base64URL.encode(Array(text.utf8), padded: true) == encoded)
        #expect(Base64URL.decode(encoded) == Array(text.utf8))
    }

    @Test("writes into a buffer sized by the count, matching Foundation with the URL alphabet")
    func writesIntoABuffer() {
        for count in 0...67 {
            let bytes = SecureRandom.bytes(count)
            let standard = Data(bytes).base64EncodedString()
            let urlSafe = standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            for padded in [false, true] {
                let size = Base64URL.encodedCount(count, padded: padded)
                let written = [UInt8](unsafeUninitializedCapacity: size + 1) { buffer, written in
                    buffer[0] = UInt8(ascii: ">")
                    written = bytes.withUnsafeBufferPointer {
                        Base64URL.encode($0, into: buffer, at: 1, padded: padded)
                    }
                }
                let expected = padded ? urlSafe : String(urlSafe.prefix { $0 != "=" })
                #expect(String(decoding: written, as: UTF8.self) == ">" + expected)
            }
        }
    }
}
