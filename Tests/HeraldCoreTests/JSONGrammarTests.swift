import HeraldCore
import Testing

/// ``JSONValue/parse(_:maximumDepth:)``, the one JSON grammar: what it builds, what it refuses
/// beyond ``JSONValue/check(_:maximumDepth:)`` (whose faults `StrictInputTests` covers), and
/// that what it reads, written back, reads the same.
@Suite struct JSONGrammarTests {
    static func parse(_ text: String, depth: Int = 512) throws(JSONFault) -> JSONValue {
        try JSONValue.parse(Array(text.utf8), maximumDepth: depth)
    }

    @Test("values are built with their kinds, escapes decoded and surrogate pairs joined")
    func builds() throws {
        let value = try Self.parse(
            #"{"i": -7, "big": 9223372036854775808, "d": 2.5, "e": 1e2, "s": "a\"\\\/\n\u00e9\ud83d\ude00", "#
                + #""t": true, "f": false, "n": null, "a": [1, [2, {}], []], "o": {"k": "v"}}"#
        )
        #expect(value["i"] == .integer(-7))
        #expect(value["big"] == .double(9_223_372_036_854_775_808))
        #expect(value["d"] == .double(2.5))
        #expect(value["e"] == .double(100))
        #expect(value["s"] == .string("a\"\\/\n\u{e9}\u{1F600}"))
        #expect(value["t"] == true && value["f"] == false && value["n"] == .null)
        #expect(value["a"] == [1, [2, [:]], []])
        #expect(value["o"]?["k"] == "v")
        #expect(try Self.parse(" 42 ") == .integer(42))
        #expect(try Self.parse(#""x""#) == "x")
    }

    @Test("parse refuses what check refuses, with the same fault")
    func sameFaultsAsCheck() {
        for text in ["[1, 2,]", #"{"a": 1, "a": 2}"#, "\u{FEFF}{}", "[1e400]", "{'a': 1}", "[[[1]]]", ""] {
            guard let checked = JSONValue.check(Array(text.utf8), maximumDepth: 2) else {
                Issue.record("check accepted \(text)")
                continue
            }
            #expect(throws: checked) { try Self.parse(text, depth: 2) }
        }
    }

    @Test("a key repeated anywhere in an object is refused, by parse and check alike, at the repeat")
    func duplicateKeys() throws {
        // Small and larger objects, the repeat first, in the middle and last.
        for count in [2, 8, 9, 20] {
            let keys = (0..<count).map { "k\($0)" }
            for repeated in [0, count / 2, count - 1] {
                let members = (keys + [keys[repeated]]).map { "\"\($0)\": 1" }
                let text = "{" + members.joined(separator: ", ") + "}"
                let checked = try #require(JSONValue.check(Array(text.utf8)), "\(text)")
                #expect(checked.kind == .duplicateKey)
                #expect(checked.message.contains("\"\(keys[repeated])\""), "\(checked)")
                #expect(throws: checked) { try Self.parse(text) }
            }
            let unique = "{" + keys.map { "\"\($0)\": [\"\($0)\"]" }.joined(separator: ", ") + "}"
            let value = try Self.parse(unique)
            #expect(value.objectValue?.count == count)
            #expect(keys.allSatisfy { value[$0] == [.string($0)] })
        }
        // Keys are compared as text: an escape spells the same key.
        let escaped = #"{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8, "i": 9, "\u0061": 10}"#
        #expect(JSONValue.check(Array(escaped.utf8))?.kind == .duplicateKey)
        #expect(throws: JSONFault.self) { try Self.parse(escaped) }
    }

    @Test("parse also refuses invalid UTF-8 and lone surrogates, which check passes over")
    func stricterStrings() {
        let cases: [(bytes: [UInt8], says: String)] = [
            ([0x22, 0x61, 0xFF, 0x22], "not valid UTF-8"),
            (Array(#"["\ud800"]"#.utf8), "half a surrogate pair"),
            (Array(#"["\ud800\u0041"]"#.utf8), "half a surrogate pair"),
            (Array(#"{"k": "\udc00"}"#.utf8), "lone low surrogate"),
        ]
        for item in cases {
            #expect(JSONValue.check(item.bytes) == nil)
            do {
                _ = try JSONValue.parse(item.bytes)
                Issue.record("accepted \(item.bytes)")
            } catch {
                #expect(error.message.contains(item.says), "\(error)")
            }
        }
    }

    @Test("depth is limited without recursion when building too")
    func depth() throws {
        #expect(try Self.parse("[[[1]]]", depth: 3) == [[[1]]])
        let deep = String(repeating: "[", count: 1_000_000)
        #expect(throws: JSONFault.self) { try Self.parse(deep, depth: 512) }
    }

    @Test("what is read, written back, reads the same; keys sorted, doubles keep their point")
    func writesBack() throws {
        let text = #"{"b":[1,2.0,-0.5,1e+20],"a":{"z":null,"y":"\u0001\"/"},"c":true}"#
        let value = try Self.parse(text)
        let written = try value.jsonBytes()
        #expect(
            String(decoding: written, as: UTF8.self)
                == #"{"a":{"y":"\u0001\"/","z":null},"b":[1,2.0,-0.5,1e+20],"c":true}"#
        )
        #expect(try JSONValue.parse(written) == value)
        #expect(throws: JSONWritingError.self) { try JSONValue.double(.infinity).jsonBytes() }
    }
}
