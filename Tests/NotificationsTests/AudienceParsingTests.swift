import Audiences
import Devices
import Foundation
import HeraldCore
import Notifications
import Testing

private let sampleToken = String(repeating: "ab", count: 32)

/// The one audience object: exactly one kind, strict, every limit with the path at fault.
@Suite("Audiences: parsing and validation")
struct AudienceParsingTests {
    static let token = sampleToken

    static func request(_ object: [String: Any]) throws -> NotificationRequest {
        var body = object
        body["payload"] = ["aps": ["alert": "Hi"]]
        return try NotificationRequest.parse(Array(try JSONSerialization.data(withJSONObject: body)), now: Date())
    }

    static func refusal(_ object: [String: Any]) -> NotificationError? {
        var body = object
        body["payload"] = ["aps": ["alert": "Hi"]]
        let data = (try? JSONSerialization.data(withJSONObject: body)) ?? Data()
        return refusal(String(decoding: data, as: UTF8.self))
    }

    static func refusal(_ text: String) -> NotificationError? {
        do {
            _ = try NotificationRequest.parse(Array(text.utf8), now: Date())
            return nil
        } catch {
            return error
        }
    }

    @Test("each kind of audience parses to its value and kind")
    func kinds() throws {
        let upper = String(repeating: "AB", count: 32)
        #expect(try Self.request(["audience": ["tokens": [upper]]]).audience == .tokens([Self.token]))
        #expect(try Self.request(["audience": ["users": ["u1", "u2"]]]).audience == .users(["u1", "u2"]))
        #expect(try Self.request(["audience": ["tags": ["any": ["a", "b"]]]]).audience == .tags(.any(["a", "b"])))
        #expect(try Self.request(["audience": ["tags": ["all": ["a"]]]]).audience == .tags(.all(["a"])))
        let all = try Self.request(["audience": ["all": true]])
        #expect(all.audience == .all)
        #expect(all.audience.kind == .all)
        #expect(all.tokens.isEmpty)
        #expect(all.audience.isResolvedAtSend)
        // Top-level tokens stay a tokens audience, as before.
        let legacy = try Self.request(["tokens": [Self.token]])
        #expect(legacy.audience == .tokens([Self.token]))
        #expect(!legacy.audience.isResolvedAtSend)
    }

    @Test("an audience round-trips through its stored JSON text")
    func storedText() {
        let audiences: [Audience] = [.users(["u1", "ü"]), .tags(.any(["a"])), .tags(.all(["a", "b"])), .all]
        for audience in audiences {
            #expect(Audience(jsonText: audience.jsonText) == audience)
        }
        #expect(Audience.all.jsonText == #"{"all":true}"#)
        #expect(Audience(jsonText: #"{"all":false}"#) == nil)
    }

    @Test(
        "refusals name the code and the exact field",
        arguments: [
            (
                #""tokens": ["abababababababababababababababababababababababababababababababab"], "audience": {"all": true}"#,
                "tokens_and_audience", "audience"
            ),
            (#""#, "missing_field", "tokens"),
            (#""audience": {}"#, "empty_audience", "audience"),
            (#""audience": "all""#, "invalid_audience", "audience"),
            (#""audience": {"all": true, "users": ["u"]}"#, "ambiguous_audience", "audience"),
            (#""audience": {"everyone": true}"#, "unknown_field", "audience.everyone"),
            (#""audience": {"all": false}"#, "invalid_all", "audience.all"),
            (#""audience": {"all": 1}"#, "invalid_all", "audience.all"),
            (#""audience": {"users": []}"#, "invalid_users", "audience.users"),
            (#""audience": {"users": ["u", 7]}"#, "invalid_user", "audience.users[1]"),
            (#""audience": {"users": ["u", ""]}"#, "invalid_user", "audience.users[1]"),
            (
                #""audience": {"users": ["uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu"]}"#,
                "invalid_user", "audience.users[0]"
            ),
            (#""audience": {"users": ["u", "v", "u"]}"#, "duplicate_user", "audience.users[2]"),
            (#""audience": {"tags": ["a"]}"#, "invalid_tags", "audience.tags"),
            (#""audience": {"tags": {}}"#, "invalid_tags", "audience.tags"),
            (#""audience": {"tags": {"any": ["a"], "all": ["b"]}}"#, "ambiguous_tags", "audience.tags"),
            (#""audience": {"tags": {"some": ["a"]}}"#, "unknown_field", "audience.tags.some"),
            (#""audience": {"tags": {"any": []}}"#, "invalid_tags", "audience.tags.any"),
            (
                #""audience": {"tags": {"all": ["ttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt"]}}"#,
                "invalid_tag", "audience.tags.all[0]"
            ),
            (#""audience": {"tags": {"any": ["a", ""]}}"#, "invalid_tag", "audience.tags.any[1]"),
            (#""audience": {"tags": {"any": ["a", "a"]}}"#, "duplicate_tag", "audience.tags.any[1]"),
            (
                #""audience": {"tags": {"any": ["t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9", "t10", "t11", "t12", "t13", "t14", "t15", "t16", "t17", "t18", "t19", "t20", "t21", "t22", "t23", "t24", "t25", "t26", "t27", "t28", "t29", "t30", "t31", "t32", "t33", "t34", "t35", "t36", "t37", "t38", "t39", "t40", "t41", "t42", "t43", "t44", "t45", "t46", "t47", "t48", "t49", "t50"]}}"#,
                "too_many_tags", "audience.tags.any"
            ),
            (#""audience": {"tokens": ["zz"]}"#, "invalid_token", "audience.tokens[0]"),
            (
                #""audience": {"tokens": ["abababababababababababababababababababababababababababababababab", "abababababababababababababababababababababababababababababababab"]}"#,
                "duplicate_token", "audience.tokens[1]"
            ),
        ]
    )
    func refusals(_ fields: String, code: String, field: String) throws {
        let text = "{" + fields + (fields.isEmpty ? "" : ", ") + #""payload": {"aps": {"alert": "Hi"}}}"#
        let error = try #require(Self.refusal(text))
        #expect(error.kind == .invalid)
        #expect(error.code == code)
        #expect(error.field == field)
        #expect(!error.message.isEmpty)
    }

    @Test("over the user or token count is too large, naming the list")
    func tooLarge() throws {
        let users = try #require(Self.refusal(["audience": ["users": (0...10_000).map { "u\($0)" }]]))
        #expect(users.kind == .tooLarge)
        #expect(users.code == "too_many_users")
        #expect(users.field == "audience.users")
        let tokens = try #require(
            Self.refusal(["audience": ["tokens": (0...10_000).map { String(format: "%064x", $0) }]])
        )
        #expect(tokens.kind == .tooLarge)
        #expect(tokens.field == "audience.tokens")
        // 10,000 users and 50 tags are within the limits.
        #expect(try Self.request(["audience": ["users": (0..<10_000).map { "u\($0)" }]]).audience.kind == .users)
        #expect(try Self.request(["audience": ["tags": ["all": (0..<50).map { "t\($0)" }]]]).audience.kind == .tagsAll)
    }
}
