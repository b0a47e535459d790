import HeraldCore
import Testing

enum ReaderTestDomain: RefusalDomain {}

/// ``JSONObjectReader``: each type and limit, the paths in messages, unknown fields and the
/// grammar's faults as refusals.
@Suite struct JSONObjectReaderTests {
    typealias Reader = JSONObjectReader<ReaderTestDomain>
    typealias Failure = Refusal<ReaderTestDomain>

    static func reader(_ text: String, depth: Int = 8, emptyIsObject: Bool = false) throws(Failure) -> Reader {
        try Reader(
            body: Array(text.utf8),
            maximumDepth: depth,
            what: "a widget",
            example: #"{"name": "w"}"#,
            emptyIsObject: emptyIsObject
        )
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var label: String
        var body: String
        /// Reads the body; throws what it refuses.
        var read: @Sendable (inout Reader) throws(Failure) -> Void
        var code: String
        var field: String?
        var says: String
        var kind: RefusalKind = .invalid
        var testDescription: String { label }
    }

    static let refusals: [Case] = [
        // The body itself.
        Case(label: "not JSON", body: "{", read: { _ in }, code: "invalid_json", field: nil, says: "line 1, column 2"),
        Case(
            label: "an array",
            body: "[1]",
            read: { _ in },
            code: "invalid_json",
            field: nil,
            says: "not a JSON object"
        ),
        Case(label: "empty", body: "", read: { _ in }, code: "invalid_json", field: nil, says: "end of the text"),
        Case(
            label: "byte order mark",
            body: "\u{FEFF}{}",
            read: { _ in },
            code: "invalid_json",
            field: nil,
            says: "byte order mark"
        ),
        Case(
            label: "duplicate key",
            body: #"{"a": {"b": 1, "b": 2}}"#,
            read: { _ in },
            code: "duplicate_key",
            field: "a.b",
            says: "appears twice"
        ),
        Case(
            label: "trailing comma names the member before it",
            body: #"{"a": {"b": 1,}}"#,
            read: { _ in },
            code: "invalid_json",
            field: "a.b",
            says: "trailing comma"
        ),
        Case(
            label: "too deep",
            body: #"{"a": [[[[[[[[1]]]]]]]]}"#,
            read: { _ in },
            code: "too_deep",
            field: "a",
            says: "more than 8 levels"
        ),
        Case(
            label: "1e400 is beyond a double",
            body: #"{"n": 1e400}"#,
            read: { _ in },
            code: "invalid_json",
            field: "n",
            says: "beyond the range"
        ),
        // Strings.
        Case(
            label: "string of the wrong type",
            body: #"{"name": 3}"#,
            read: { r throws(Failure) in _ = try r.string("name") },
            code: "invalid_name",
            field: "name",
            says: "name must be a string"
        ),
        Case(
            label: "string too long",
            body: #"{"name": "abcdef"}"#,
            read: { r throws(Failure) in _ = try r.string("name", maximumBytes: 5) },
            code: "invalid_name",
            field: "name",
            says: "6 bytes: send at most 5"
        ),
        Case(
            label: "string too long as too large",
            body: #"{"name": "abcdef"}"#,
            read: { r throws(Failure) in _ = try r.string("name", maximumBytes: 5, tooLongCode: "name_too_long") },
            code: "name_too_long",
            field: "name",
            says: "send at most 5",
            kind: .tooLarge
        ),
        Case(
            label: "empty string",
            body: #"{"name": ""}"#,
            read: { r throws(Failure) in _ = try r.string("name", allowEmpty: false) },
            code: "invalid_name",
            field: "name",
            says: "must not be empty"
        ),
        Case(
            label: "required string missing",
            body: "{}",
            read: { r throws(Failure) in _ = try r.requiredString("name", hint: "send the widget's name") },
            code: "missing_field",
            field: "name",
            says: "name is missing: send the widget's name"
        ),
        Case(
            label: "required string null",
            body: #"{"name": null}"#,
            read: { r throws(Failure) in _ = try r.requiredString("name") },
            code: "missing_field",
            field: "name",
            says: "is missing"
        ),
        // Integers.
        Case(
            label: "1.5 is not whole",
            body: #"{"size": 1.5}"#,
            read: { r throws(Failure) in _ = try r.integer("size", in: 0...10) },
            code: "invalid_size",
            field: "size",
            says: "whole number from 0 to 10"
        ),
        Case(
            label: "integer out of range",
            body: #"{"size": 11}"#,
            read: { r throws(Failure) in _ = try r.integer("size", in: 0...10, message: "size must be 0 to 10") },
            code: "invalid_size",
            field: "size",
            says: "size must be 0 to 10"
        ),
        Case(
            label: "true is not an integer",
            body: #"{"size": true}"#,
            read: { r throws(Failure) in _ = try r.integer("size", code: "bad_size") },
            code: "bad_size",
            field: "size",
            says: "whole number"
        ),
        Case(
            label: "a string is not an integer",
            body: #"{"size": "3"}"#,
            read: { r throws(Failure) in _ = try r.integer("size") },
            code: "invalid_size",
            field: "size",
            says: "whole number"
        ),
        Case(
            label: "1e300 is whole but beyond 64 bits",
            body: #"{"size": 1e300}"#,
            read: { r throws(Failure) in _ = try r.integer("size") },
            code: "invalid_size",
            field: "size",
            says: "whole number"
        ),
        // Numbers and booleans.
        Case(
            label: "number out of range",
            body: #"{"score": 1.5}"#,
            read: { r throws(Failure) in _ = try r.number("score", in: 0...1) },
            code: "invalid_score",
            field: "score",
            says: "from 0.0 to 1.0"
        ),
        Case(
            label: "1 is not a boolean",
            body: #"{"on": 1}"#,
            read: { r throws(Failure) in _ = try r.bool("on") },
            code: "invalid_on",
            field: "on",
            says: "true or false"
        ),
        // Nested objects and arrays: paths in messages.
        Case(
            label: "nested object of the wrong type",
            body: #"{"audience": []}"#,
            read: { r throws(Failure) in _ = try r.object("audience", shape: #"{"tags": […]}"#) },
            code: "invalid_audience",
            field: "audience",
            says: #"audience must be {"tags": […]}"#
        ),
        Case(
            label: "nested array element names its path",
            body: #"{"audience": {"tags": ["a", "b", 7]}}"#,
            read: { r throws(Failure) in
                var audience = try r.object("audience", shape: "an object")
                _ = try audience?.strings("tags", maximumCount: 5, elementCode: "invalid_tag")
            },
            code: "invalid_tag",
            field: "audience.tags[2]",
            says: "audience.tags[2] must be a string"
        ),
        Case(
            label: "array too long",
            body: #"{"tags": ["a", "b", "c"]}"#,
            read: { r throws(Failure) in _ = try r.strings("tags", maximumCount: 2) },
            code: "too_many_tags",
            field: "tags",
            says: "3 entries: send at most 2"
        ),
        Case(
            label: "array too long as too large",
            body: #"{"tags": ["a", "b", "c"]}"#,
            read: { r throws(Failure) in _ = try r.array("tags", maximumCount: 2, tooManyIsTooLarge: true) },
            code: "too_many_tags",
            field: "tags",
            says: "send at most 2",
            kind: .tooLarge
        ),
        Case(
            label: "not an array",
            body: #"{"tags": "a"}"#,
            read: { r throws(Failure) in _ = try r.strings("tags") },
            code: "invalid_tags",
            field: "tags",
            says: "array of strings"
        ),
        Case(
            label: "empty element refused",
            body: #"{"tags": [""]}"#,
            read: { r throws(Failure) in _ = try r.strings("tags") },
            code: "invalid_tags",
            field: "tags[0]",
            says: "must not be empty"
        ),
        // Unknown fields.
        Case(
            label: "unknown field after reading",
            body: #"{"name": "w", "colour": "red"}"#,
            read: { r throws(Failure) in
                _ = try r.string("name")
                _ = try r.integer("size")
                try r.finish()
            },
            code: "unknown_field",
            field: "colour",
            says: #""colour" is not a field of a widget: use name, size"#
        ),
        Case(
            label: "unknown field in a nested object",
            body: #"{"alert": {"title": "t", "subtitle": "s"}}"#,
            read: { r throws(Failure) in
                var alert = try r.object("alert", what: "an alert", shape: "an object")
                _ = try alert?.string("title")
                try alert?.finish(hint: "an alert takes title and body")
            },
            code: "unknown_field",
            field: "alert.subtitle",
            says: #""subtitle" is not a field of an alert: an alert takes title and body"#
        ),
        Case(
            label: "unknown field up front",
            body: #"{"size": "not even checked", "zz": 1}"#,
            read: { r throws(Failure) in try r.rejectUnknown(["size"]) },
            code: "unknown_field",
            field: "zz",
            says: "use size"
        ),
        Case(
            label: "a long unknown key is cut in the field and not quoted",
            body: #"{"\#(String(repeating: "k", count: 100))": 1}"#,
            read: { r throws(Failure) in try r.finish() },
            code: "unknown_field",
            field: String(repeating: "k", count: 64),
            says: "a field is not a field of a widget"
        ),
    ]

    @Test("each refusal has its code, field (the JSON path) and a message saying what to fix", arguments: refusals)
    func refuses(_ item: Case) {
        do throws(Failure) {
            var reader = try Self.reader(item.body)
            try item.read(&reader)
            Issue.record("accepted \(item.body)")
        } catch {
            #expect(error.code == item.code)
            #expect(error.field == item.field)
            #expect(error.kind == item.kind)
            #expect(error.message.contains(item.says), "\(error.message)")
        }
    }

    @Test("values of every type are read, null and absence are nil, read fields are known")
    func reads() throws {
        var reader = try Self.reader(
            #"{"name": "w", "size": 3, "whole": 1.0, "big": -9007199254740992, "score": 0.5, "on": false, "#
                + #""tags": ["a", "b"], "inner": {"k": "v"}, "payload": {"aps": {}}, "gone": null}"#
        )
        let name = try reader.requiredString("name", maximumBytes: 1)
        let size = try reader.integer("size", in: 0...3)
        let whole = try reader.integer("whole")
        let big = try reader.integer("big")
        let score = try reader.number("score", in: 0...1)
        let on = try reader.bool("on")
        let tags = try reader.strings("tags", maximumCount: 2)
        #expect(name == "w" && size == 3 && whole == 1 && big == -9_007_199_254_740_992)
        #expect(score == 0.5 && on == false && tags == ["a", "b"])
        var inner = try #require(try reader.object("inner", shape: "an object"))
        let innerK = try inner.string("k")
        #expect(inner.path == "inner" && inner.field("k") == "inner.k" && innerK == "v")
        try inner.finish()
        let payload = reader.raw("payload")
        let gone = reader.raw("gone")
        let goneString = try reader.string("gone")
        let absent = try reader.integer("absent")
        #expect(payload == ["aps": [:]])
        #expect(reader.has("gone") && gone == .null && goneString == nil && absent == nil)
        try reader.finish()
    }

    @Test("an empty body is {} only when asked")
    func emptyBody() throws {
        let reader = try Self.reader(" \n", emptyIsObject: true)
        #expect(reader.members.isEmpty)
        #expect(throws: Failure.self) { try Self.reader(" \n") }
    }

    @Test("invalid UTF-8 in a string names the top-level field")
    func invalidUTF8() {
        let body: [UInt8] = Array(#"{"name": {"x": ""#.utf8) + [0xFF] + Array(#""}}"#.utf8)
        do throws(Failure) {
            _ = try Reader(body: body, maximumDepth: 8, what: "a widget", example: "{}")
            Issue.record("accepted invalid UTF-8")
        } catch {
            #expect(error.code == "invalid_utf8")
            #expect(error.field == "name")
        }
    }

    @Test("a refusal moves to another domain unchanged")
    func convertsDomain() {
        enum OtherDomain: RefusalDomain {}
        let refusal = Failure.tooLarge("too_many_tags", "tags has 3 entries", field: "tags")
        let other = Refusal<OtherDomain>(refusal)
        #expect(other.kind == .tooLarge && other.code == refusal.code && other.field == "tags")
    }

    @Test("whole numbers: integers and doubles without a fraction within 2^53")
    func wholeNumbers() {
        let cases: [(JSONValue, Int64?)] = [
            (.integer(7), 7), (.double(1.0), 1), (.double(1.5), nil), (.double(1e300), nil),
            (.double(-0.0), 0), (.bool(true), nil), (.string("1"), nil), (.null, nil),
        ]
        for (value, expected) in cases { #expect(Reader.wholeNumber(value) == expected, "\(value)") }
    }
}
