import Foundation
import HeraldCore
import Testing

/// ``JSONValue/decode(_:)``: `Decodable` types read from the one grammar's value, as
/// `JSONDecoder` reads the same text (Foundation's encoder writes it here, as an oracle).
@Suite struct JSONValueDecodingTests {
    enum Color: String, Codable, Hashable { case red, green }
    enum Level: Int, Codable, Hashable { case low = 1, high = 9 }

    enum Shape: Codable, Hashable {
        case circle(radius: Double)
        case tags([String])
        case none
    }

    struct Inner: Codable, Hashable {
        var name: String
        var score: Int8?
        var ratio: Float
    }

    struct Outer: Codable, Hashable {
        var id: UUID
        var count: Int
        var big: UInt64
        var negative: Int64
        var flag: Bool
        var optional: String?
        var nothing: Int?
        var color: Color
        var level: Level
        var shapes: [Shape]
        var inner: Inner
        var inners: [Inner?]
        var matrix: [[Int]]
        var map: [String: Double]
        var extra: JSONValue
        var date: Date
        var data: Data
        var url: URL
    }

    static let sample = Outer(
        id: UUID(uuidString: "5B4D2C7E-1A3F-4E2B-9C8D-0123456789AB")!,
        count: -42,
        big: UInt64(Int64.max),
        negative: Int64.min,
        flag: true,
        optional: "é\n\"",
        nothing: nil,
        color: .green,
        level: .high,
        shapes: [.circle(radius: 2.5), .tags(["a", "b"]), .none],
        inner: Inner(name: "x", score: -128, ratio: 0.5),
        inners: [nil, Inner(name: "y", score: nil, ratio: 3)],
        matrix: [[], [1, 2], [3]],
        map: ["half": 0.5, "whole": 4],
        extra: ["k": [1, 2.5, nil, true, "s"]],
        date: Date(timeIntervalSinceReferenceDate: 1234.5),
        data: Data([0, 1, 254, 255]),
        url: URL(string: "https://example.com/a?b=c")!
    )

    static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONValue(parsing: Array(text.utf8)).decode(type)
    }

    @Test("what JSONEncoder writes decodes equal, with or without sorted keys")
    func roundTrip() throws {
        for formatting: JSONEncoder.OutputFormatting in [[.sortedKeys], [.prettyPrinted]] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = formatting
            let bytes = Array(try encoder.encode(Self.sample))
            #expect(try JSONValue(parsing: bytes).decode(Outer.self) == Self.sample)
            #expect(try JSONDecoder().decode(Outer.self, from: Data(bytes)) == Self.sample)
        }
    }

    @Test("integral numbers decode into doubles, integral doubles into integers, fractions into no integer")
    func numbers() throws {
        #expect(try Self.decode(Double.self, "3") == 3)
        #expect(try Self.decode(Float.self, "-2") == -2)
        #expect(try Self.decode(Int.self, "3.0") == 3)
        #expect(try Self.decode(Int.self, "1e2") == 100)
        #expect(try Self.decode(UInt64.self, "9223372036854775807") == UInt64(Int64.max))
        #expect(try Self.decode(Int64.self, "9007199254740991.0") == 9_007_199_254_740_991)
        #expect(try Self.decode([Int16].self, "[-32768, 32767]") == [-32768, 32767])
        for text in ["3.5", "1e-1"] {
            #expect(throws: DecodingError.self) { try Self.decode(Int.self, text) }
        }
    }

    @Test("an integer beyond its type throws, naming the number and the path")
    func overflow() throws {
        for text in ["128", "-129"] {
            #expect(throws: DecodingError.self) { try Self.decode(Int8.self, text) }
        }
        #expect(throws: DecodingError.self) { try Self.decode(UInt.self, "-1") }
        #expect(throws: DecodingError.self) { try Self.decode(Int64.self, "9223372036854775808") }
        // Beyond Int64.max the grammar keeps a double, which no longer tells the integer apart.
        for text in ["9223372036854775809", "18446744073709551615", "18446744073709551616", "1e18"] {
            #expect(throws: DecodingError.self, "\(text)") { try Self.decode(UInt64.self, text) }
        }
        #expect(throws: DecodingError.self) { try Self.decode(Float.self, "1e300") }
        let error = try #require(throws: DecodingError.self) {
            try Self.decode(Inner.self, #"{"name": "x", "score": 300, "ratio": 1}"#)
        }
        guard case .dataCorrupted(let context) = error else {
            Issue.record("expected dataCorrupted, got \(error)")
            return
        }
        #expect(context.codingPath.map(\.stringValue) == ["score"])
        #expect(context.debugDescription == "the number 300 does not fit in Int8")
    }

    @Test("a value of the wrong kind throws typeMismatch with its coding path")
    func mismatches() throws {
        let cases: [(text: String, path: [String])] = [
            (#"{"name": 1, "ratio": 1}"#, ["name"]),
            (#"{"name": "x", "ratio": "1"}"#, ["ratio"]),
            (#"{"name": "x", "ratio": true}"#, ["ratio"]),
            (#"{"name": "x", "ratio": null}"#, ["ratio"]),
            (#"{"name": "x", "score": 1.5, "ratio": 1}"#, ["score"]),
        ]
        for (text, path) in cases {
            let error = try #require(throws: DecodingError.self) { try Self.decode(Inner.self, text) }
            switch error {
            case .typeMismatch(_, let context), .dataCorrupted(let context), .valueNotFound(_, let context):
                #expect(context.codingPath.map(\.stringValue) == path, "\(text)")
            default:
                Issue.record("\(text): unexpected \(error)")
            }
        }
        let nested = try #require(throws: DecodingError.self) {
            try Self.decode([String: [Inner]].self, #"{"k": [{"name": "a", "ratio": 1}, {"name": false}]}"#)
        }
        guard case .typeMismatch(_, let context) = nested else {
            Issue.record("expected typeMismatch, got \(nested)")
            return
        }
        #expect(context.codingPath.map(\.stringValue) == ["k", "Index 1", "name"])
        #expect(context.debugDescription == "expected a string, found a boolean")
        #expect(throws: DecodingError.self) { try Self.decode(Bool.self, "1") }
        #expect(throws: DecodingError.self) { try Self.decode(Color.self, #""blue""#) }
        #expect(throws: DecodingError.self) { try Self.decode(Level.self, "2") }
        #expect(throws: DecodingError.self) { try Self.decode([Int].self, "{}") }
        #expect(throws: DecodingError.self) { try Self.decode(Data.self, #""not base64!""#) }
    }

    @Test("a missing key throws keyNotFound; a missing or null optional decodes as nil")
    func optionals() throws {
        let error = try #require(throws: DecodingError.self) { try Self.decode(Inner.self, #"{"ratio": 1}"#) }
        guard case .keyNotFound(let key, _) = error else {
            Issue.record("expected keyNotFound, got \(error)")
            return
        }
        #expect(key.stringValue == "name")
        #expect(try Self.decode(Inner.self, #"{"name": "n", "ratio": 1}"#).score == nil)
        #expect(try Self.decode(Inner.self, #"{"name": "n", "score": null, "ratio": 1}"#).score == nil)
        #expect(try Self.decode(JSONValue?.self, "null") == nil)
        #expect(try Self.decode([Int?].self, "[null, 1]") == [nil, 1])
    }
}
