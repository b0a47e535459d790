import Devices
import HeraldCore
import Testing

@Suite("Devices: HERALD_CLIENT_TAGS, the tags a client may set")
struct ClientTagPolicyTests {
    @Test(
        "values that parse, and what they allow",
        arguments: [
            ("", [], ["news", "a"]),
            ("   ", [], ["news"]),
            ("news", ["news"], ["new", "news2", "lang-en", "News"]),
            ("news,lang-*", ["news", "lang-", "lang-en", "lang-pt-BR"], ["lang", "staff", "xlang-en"]),
            (" news , lang-* ,\tteam ", ["news", "lang-fr", "team"], ["vip"]),
            ("*", ["staff", "vip", "x"], []),
            ("news,news,lang-*,lang-*", ["news", "lang-x"], ["staff"]),
            ("café,é-*", ["café", "é-1"], ["cafe"]),
            (String(repeating: "t", count: 64), [String(repeating: "t", count: 64)], ["t"]),
        ] as [(String, [String], [String])]
    )
    func parses(value: String, allowed: [String], refused: [String]) throws {
        let policy = try ClientTagPolicy.parse(value)
        for tag in allowed { #expect(policy.allows(tag), "\(value) should allow \(tag)") }
        for tag in refused { #expect(!policy.allows(tag), "\(value) should refuse \(tag)") }
        #expect(try ClientTagPolicy.parse(policy.description) == policy)
    }

    @Test(
        "values that do not parse, each with a message naming the entry",
        arguments: [
            ("news,,lang-*", "entry 2 is empty"),
            ("news,", "entry 2 is empty"),
            (",news", "entry 1 is empty"),
            ("la*ng", "entry 1 (\"la*ng\") has a * before its end"),
            ("news,**", "entry 2 (\"**\") has a * before its end"),
            ("news,a\u{7}b", "entry 2 holds a control character"),
            (String(repeating: "t", count: 65), "entry 1 is 65 characters"),
            (Array(repeating: "t", count: 1_001).joined(separator: ","), "lists 1001 tags"),
        ] as [(String, String)]
    )
    func refuses(value: String, message: String) {
        #expect {
            try ClientTagPolicy.parse(value)
        } throws: { error in
            (error as? ClientTagPolicy.ParseError)?.message.hasPrefix(message) == true
        }
    }

    @Test("a combining mark after a comma does not hide the comma")
    func combiningMark() throws {
        let policy = try ClientTagPolicy.parse("\u{301}x,b")
        #expect(policy.allows("b"))
        #expect(policy.allows("\u{301}x"))
        #expect(try ClientTagPolicy.parse(policy.description) == policy)
    }

    @Test("a client body's tags are checked against the policy: 403 tag_not_allowed naming the tag")
    func clientBody() throws {
        let policy = try ClientTagPolicy.parse("news,lang-*")
        let body = Array(#"{"tags": ["news", "lang-fr", "staff"]}"#.utf8)
        #expect {
            try DeviceInput.parse(body, allowUserID: false, tagPolicy: policy)
        } throws: { error in
            guard let error = error as? DeviceError else { return false }
            return error.kind == .forbidden && error.code == "tag_not_allowed" && error.field == "tags[2]"
                && error.message.contains("\"staff\"")
        }
        let allowed = try DeviceInput.parse(Array(#"{"tags": ["news", "lang-fr"]}"#.utf8), tagPolicy: policy)
        #expect(allowed.tags == ["news", "lang-fr"])
        // No policy: the API key sets any tag; an empty policy: a client sets none.
        #expect(try DeviceInput.parse(body).tags == ["news", "lang-fr", "staff"])
        #expect(throws: DeviceError.self) {
            try DeviceInput.parse(Array(#"{"tags": ["news"]}"#.utf8), allowUserID: false, tagPolicy: .noTags)
        }
        #expect(try DeviceInput.parse(Array(#"{"tags": []}"#.utf8), allowUserID: false, tagPolicy: .noTags).tags == [])
    }
}
