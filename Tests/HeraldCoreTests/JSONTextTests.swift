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
}
