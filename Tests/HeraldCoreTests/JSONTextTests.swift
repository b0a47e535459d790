import Foundation
import HeraldCore
import Testing

@Suite struct JSONTextTests {
    @Test func escapesWhatJSONRequires() {
        #expect(JSONText.quote("plain") == "\"plain\"")
        #expect(JSONText.quote("a\"b\\c") == "\"a\\\"b\\\\c\"")
        #expect(JSONText.quote("line\nfeed\r\ttab") == "\"line\\nfeed\\r\\ttab\"")
        #expect(JSONText.quote("\u{1}\u{1F}") == "\"\\u0001\\u001f\"")
        #expect(JSONText.quote("caf\u{E9} \u{2026} \u{1F600}") == "\"caf\u{E9} \u{2026} \u{1F600}\"")
        #expect(JSONText.quote("") == "\"\"")
    }

    /// A JSON decoder reads back every string exactly, whatever it holds.
    @Test func roundTripsThroughAJSONDecoder() throws {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [Unicode.Scalar] = [
            "a", "Z", "0", " ", "\"", "\\", "/", "\n", "\r", "\t", "\u{0}", "\u{8}", "\u{1F}", "\u{7F}",
            "\u{E9}", "\u{2028}", "\u{2026}", "\u{FFFD}", "\u{1F600}",
        ]
        for _ in 0..<500 {
            var value = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0...40, using: &generator) {
                value.append(alphabet.randomElement(using: &generator)!)
            }
            let string = String(value)
            let decoded = try JSONDecoder().decode(String.self, from: Data(JSONText.quote(string).utf8))
            #expect(decoded == string)
        }
    }

    /// The short forms `JSONEncoder` uses for backspace and form feed, as the relay's payload needs.
    @Test func escapesAsJSONEncoderDoes() throws {
        #expect(JSONText.quote("\u{8}\u{C}\u{0}\u{7F}/") == "\"\\b\\f\\u0000\u{7F}/\"")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        for value in ["a\u{8}b\u{C}c\t\n\r\"\\", "\u{1}\u{1F}\u{7F} caf\u{E9}", "\u{2028}\u{1F600}", ""] {
            let expected = String(decoding: try encoder.encode(value), as: UTF8.self)
            #expect(JSONText.quote(value) == expected)
        }
    }

    @Test func writesIntoABufferSizedByTheCount() {
        let value = "tab\there \"q\" \u{1}\u{8} caf\u{E9}"
        let count = JSONText.quotedCount(value)
        let bytes = [UInt8](unsafeUninitializedCapacity: count + 3) { buffer, written in
            buffer[0] = UInt8(ascii: "[")
            let end = JSONText.write(quoted: value, into: buffer, at: 1)
            #expect(end == count + 1)
            buffer[end] = UInt8(ascii: ",")
            buffer[end + 1] = UInt8(ascii: "]")
            written = end + 2
        }
        #expect(String(decoding: bytes, as: UTF8.self) == "[" + JSONText.quote(value) + ",]")
        var out: [UInt8] = Array("x=".utf8)
        JSONText.append(quoted: value, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "x=" + JSONText.quote(value))
    }
}
