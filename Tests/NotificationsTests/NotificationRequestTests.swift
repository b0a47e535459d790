import APNs
import Foundation
import HeraldCore
import Notifications
import Testing

@Suite("Notification request validation")
struct NotificationRequestTests {
    static let token = String(repeating: "ab", count: 32)
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func parse(_ object: [String: Any]) throws(NotificationError) -> NotificationRequest {
        let data = try! JSONSerialization.data(withJSONObject: object)
        return try NotificationRequest.parse(Array(data), now: now)
    }

    static func valid(_ changes: [String: Any] = [:], removing: [String] = []) -> [String: Any] {
        var object: [String: Any] = ["tokens": [token], "payload": ["aps": ["alert": "Hi"]]]
        for (key, value) in changes { object[key] = value }
        for key in removing { object.removeValue(forKey: key) }
        return object
    }

    @Test("a minimal request is an alert sent now, the token lowercased")
    func minimal() throws {
        let request = try Self.parse(Self.valid(["tokens": [Self.token.uppercased()]]))
        #expect(request.tokens == [Self.token])
        #expect(request.pushType == .alert)
        #expect(request.sendAt == nil)
        #expect(request.expiration == .omitted)
        let payload = try JSONSerialization.jsonObject(with: Data(request.payload)) as? [String: Any]
        #expect((payload?["aps"] as? [String: Any])?["alert"] as? String == "Hi")
    }

    @Test("every field is read")
    func allFields() throws {
        let request = try Self.parse(
            Self.valid([
                "app": "com.example.app", "environment": "sandbox", "push_type": "background", "priority": 5,
                "expiration": "2030-01-01T00:00:00Z", "collapse_id": "c1", "topic": "com.example.app",
                "payload": ["aps": ["content-available": 1]], "send_at": 1_800_000_600,
            ])
        )
        #expect(request.app == "com.example.app")
        #expect(request.environment == .sandbox)
        #expect(request.pushType == .background)
        #expect(request.priority == .consideringDevicePower)
        #expect(request.expiration == .at(Date(timeIntervalSince1970: 1_893_456_000)))
        #expect(request.collapseID == "c1")
        #expect(request.sendAt == Date(timeIntervalSince1970: 1_800_000_600))
    }

    @Test("send_at accepts RFC 3339 and expiration 0 means do not store")
    func rfc3339() throws {
        // 1_800_000_000 is 2027-01-15T08:00:00Z.
        let request = try Self.parse(Self.valid(["send_at": "2027-01-15T09:00:00Z", "expiration": 0]))
        #expect(request.sendAt == Self.now.addingTimeInterval(3_600))
        #expect(request.expiration == .immediately)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var body: @Sendable () -> [String: Any]
        var kind: NotificationError.Kind
        var code: String
        var field: String?
        var messageContains: String
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "no tokens",
            body: { valid(removing: ["tokens"]) },
            kind: .invalid,
            code: "missing_field",
            field: "tokens",
            messageContains: "tokens is missing"
        ),
        Case(
            name: "empty tokens",
            body: { valid(["tokens": [String]()]) },
            kind: .invalid,
            code: "invalid_tokens",
            field: "tokens",
            messageContains: "at least one"
        ),
        Case(
            name: "tokens not an array",
            body: { valid(["tokens": "abc"]) },
            kind: .invalid,
            code: "invalid_tokens",
            field: "tokens",
            messageContains: "array"
        ),
        Case(
            name: "short token",
            body: { valid(["tokens": [token, "abcd"]]) },
            kind: .invalid,
            code: "invalid_token",
            field: "tokens[1]",
            messageContains: "64 to 200"
        ),
        Case(
            name: "non-hex token",
            body: { valid(["tokens": [String(repeating: "zz", count: 32)]]) },
            kind: .invalid,
            code: "invalid_token",
            field: "tokens[0]",
            messageContains: "0-9 and a-f"
        ),
        Case(
            name: "token not a string",
            body: { valid(["tokens": [42]]) },
            kind: .invalid,
            code: "invalid_token",
            field: "tokens[0]",
            messageContains: "not a string"
        ),
        Case(
            name: "duplicate token",
            body: { valid(["tokens": [token, token.uppercased()]]) },
            kind: .invalid,
            code: "duplicate_token",
            field: "tokens[1]",
            messageContains: "repeats"
        ),
        Case(
            name: "10,001 tokens",
            body: { valid(["tokens": (0..<10_001).map { String(format: "%064x", $0) }]) },
            kind: .tooLarge,
            code: "too_many_tokens",
            field: "tokens",
            messageContains: "at most 10000"
        ),
        Case(
            name: "no payload",
            body: { valid(removing: ["payload"]) },
            kind: .invalid,
            code: "missing_field",
            field: "payload",
            messageContains: "payload is missing"
        ),
        Case(
            name: "payload not an object",
            body: { valid(["payload": [1, 2]]) },
            kind: .invalid,
            code: "invalid_payload",
            field: "payload",
            messageContains: "JSON object"
        ),
        Case(
            name: "payload too large for an alert",
            body: { valid(["payload": ["aps": ["alert": String(repeating: "x", count: 4_100)]]]) },
            kind: .tooLarge,
            code: "payload_too_large",
            field: "payload",
            messageContains: "at most 4096"
        ),
        Case(
            name: "background push with an alert",
            body: { valid(["push_type": "background", "payload": ["aps": ["content-available": 1, "alert": "x"]]]) },
            kind: .invalid,
            code: "bad_payload",
            field: "payload.aps.alert",
            messageContains: "background"
        ),
        Case(
            name: "unknown push type",
            body: { valid(["push_type": "banner"]) },
            kind: .invalid,
            code: "invalid_push_type",
            field: "push_type",
            messageContains: "use one of"
        ),
        Case(
            name: "priority 7",
            body: { valid(["priority": 7]) },
            kind: .invalid,
            code: "invalid_priority",
            field: "priority",
            messageContains: "10, 5 or 1"
        ),
        Case(
            name: "priority true",
            body: { valid(["priority": true]) },
            kind: .invalid,
            code: "invalid_priority",
            field: "priority",
            messageContains: "10, 5 or 1"
        ),
        Case(
            name: "priority 10 for a background push",
            body: { valid(["push_type": "background", "priority": 10, "payload": ["aps": ["content-available": 1]]]) },
            kind: .invalid,
            code: "bad_priority",
            field: "priority",
            messageContains: "use 5"
        ),
        Case(
            name: "bad environment",
            body: { valid(["environment": "staging"]) },
            kind: .invalid,
            code: "invalid_environment",
            field: "environment",
            messageContains: "production"
        ),
        Case(
            name: "send_at not a time",
            body: { valid(["send_at": "tomorrow"]) },
            kind: .invalid,
            code: "invalid_send_at",
            field: "send_at",
            messageContains: "RFC 3339"
        ),
        Case(
            name: "send_at in the past",
            body: { valid(["send_at": 1_700_000_000]) },
            kind: .invalid,
            code: "invalid_send_at",
            field: "send_at",
            messageContains: "in the past"
        ),
        Case(
            name: "send_at too far",
            body: { valid(["send_at": "2099-01-01T00:00:00Z"]) },
            kind: .invalid,
            code: "invalid_send_at",
            field: "send_at",
            messageContains: "366 days"
        ),
        Case(
            name: "bad expiration",
            body: { valid(["expiration": -5]) },
            kind: .invalid,
            code: "invalid_expiration",
            field: "expiration",
            messageContains: "Unix seconds"
        ),
        Case(
            name: "long collapse id",
            body: { valid(["collapse_id": String(repeating: "c", count: 65)]) },
            kind: .invalid,
            code: "bad_collapse_id",
            field: "collapse_id",
            messageContains: "1 to 64"
        ),
        Case(
            name: "bad topic",
            body: { valid(["topic": "com example"]) },
            kind: .invalid,
            code: "bad_topic",
            field: "topic",
            messageContains: "bundle ID"
        ),
        Case(
            name: "unknown field",
            body: { valid(["token": token]) },
            kind: .invalid,
            code: "unknown_field",
            field: "token",
            messageContains: "not a field"
        ),
        Case(
            name: "nesting too deep",
            body: {
                var value: Any = ["x": 1]
                for _ in 0..<40 { value = ["x": value] }
                return valid(["payload": ["aps": [:], "deep": value]])
            },
            kind: .invalid,
            code: "too_deep",
            field: "payload",
            messageContains: "32 levels"
        ),
    ]

    @Test("each bad input gets its kind, code, field and a message", arguments: cases)
    func rejects(_ testCase: Case) {
        do {
            _ = try Self.parse(testCase.body())
            Issue.record("accepted: \(testCase.name)")
        } catch {
            #expect(error.kind == testCase.kind)
            #expect(error.code == testCase.code)
            #expect(error.field == testCase.field)
            #expect(error.message.contains(testCase.messageContains), "message: \(error.message)")
        }
    }

    @Test("a body that is not JSON, or not an object, is refused")
    func notJSON() {
        for body in ["{", "[1]", "\"x\""] {
            #expect(throws: NotificationError.self) {
                try NotificationRequest.parse(Array(body.utf8), now: Self.now)
            }
        }
        do {
            _ = try NotificationRequest.parse(Array("{".utf8), now: Self.now)
        } catch {
            #expect(error.code == "invalid_json")
            #expect(error.kind == .invalid)
        }
    }

    @Test("10,000 tokens are accepted")
    func tenThousand() throws {
        let tokens = (0..<10_000).map { String(format: "%064x", $0) }
        let request = try Self.parse(Self.valid(["tokens": tokens]))
        #expect(request.tokens.count == 10_000)
    }
}
