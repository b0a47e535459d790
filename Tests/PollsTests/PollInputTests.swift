import Foundation
import HeraldCore
import Testing

@testable import Polls

/// Every limit of the create and vote bodies is a 4xx naming its field.
@Suite("Polls: create and vote bodies")
struct PollInputTests {
    let now = Date(timeIntervalSince1970: 1_790_000_000)

    static func members(_ count: Int) -> String {
        "[" + (0..<count).map { #"{"user_id": "u\#($0)", "name": "N\#($0)"}"# }.joined(separator: ", ") + "]"
    }

    static let two = members(2)

    @Test(
        "a refused create names its field",
        arguments: [
            (#"{"options": ["a", "b"], "members": \#(two)}"#, "question", "missing_field"),
            (#"{"question": "", "options": ["a", "b"], "members": \#(two)}"#, "question", "invalid_question"),
            (
                #"{"question": "\#(String(repeating: "q", count: 501))", "options": ["a", "b"], "members": \#(two)}"#,
                "question", "invalid_question"
            ),
            (#"{"question": "q", "members": \#(two)}"#, "options", "missing_field"),
            (#"{"question": "q", "options": ["a"], "members": \#(two)}"#, "options", "too_few_options"),
            (
                #"{"question": "q", "options": ["1","2","3","4","5","6","7","8","9","10","11"], "members": \#(two)}"#,
                "options", "too_many_options"
            ),
            (#"{"question": "q", "options": ["a", "a"], "members": \#(two)}"#, "options", "duplicate_option"),
            (#"{"question": "q", "options": ["a", ""], "members": \#(two)}"#, "options[1]", "invalid_options"),
            (#"{"question": "q", "options": ["a", 2], "members": \#(two)}"#, "options[1]", "invalid_options"),
            (#"{"question": "q", "options": ["a", "b"]}"#, "members", "missing_field"),
            (#"{"question": "q", "options": ["a", "b"], "members": \#(members(1))}"#, "members", "too_few_members"),
            (#"{"question": "q", "options": ["a", "b"], "members": \#(members(501))}"#, "members", "too_many_members"),
            (
                #"{"question": "q", "options": ["a", "b"], "members": [{"user_id": "u", "name": "A"}, {"user_id": "u", "name": "B"}]}"#,
                "members[1].user_id", "duplicate_member"
            ),
            (
                #"{"question": "q", "options": ["a", "b"], "members": [{"user_id": "u", "name": "A"}, {"user_id": "v"}]}"#,
                "members[1].name", "missing_field"
            ),
            (
                #"{"question": "q", "options": ["a", "b"], "members": [{"user_id": "u", "name": "A"}, {"user_id": "v", "name": "B", "x": 1}]}"#,
                "members[1].x", "unknown_field"
            ),
            (
                #"{"question": "q", "options": ["a", "b"], "members": \#(two), "host_user_id": "nobody"}"#,
                "host_user_id", "invalid_host_user_id"
            ),
            (
                #"{"question": "q", "options": ["a", "b"], "members": \#(two), "closes_at": 1790000000}"#,
                "closes_at", "invalid_closes_at"
            ),
            (
                #"{"question": "q", "options": ["a", "b"], "members": \#(two), "closes_at": "soon"}"#, "closes_at",
                "invalid_closes_at"
            ),
            (
                #"{"question": "q", "options": ["a", "b"], "members": \#(two), "color": "red"}"#, "color",
                "unknown_field"
            ),
            (
                #"{"question": "q", "options": ["a", "b"], "members": \#(two), "live_activity": {"attributes_type": "T", "alert": {}}}"#,
                "live_activity.content_state", "missing_field"
            ),
            (
                #"{"question": "q", "options": ["a", "b"], "members": \#(two), "live_activity": {"attributes_type": "T", "content_state": {}, "alert": {}, "x": 1}}"#,
                "live_activity.x", "unknown_field"
            ),
            (
                #"{"question": "q", "options": ["a", "b"], "members": \#(two), "environment": "dev"}"#, "environment",
                "invalid_environment"
            ),
        ]
    )
    func refusedCreate(body: String, field: String, code: String) throws {
        let error = #expect(throws: PollError.self) { try PollInput.parseCreate(Array(body.utf8), now: now) }
        #expect(error?.field == field)
        #expect(error?.code == code)
        #expect(error?.kind == .invalid, "400")
    }

    @Test("a valid create is read whole")
    func validCreate() throws {
        let request = try PollInput.parseCreate(createBody(members: 3, closesAt: 1_790_000_600), now: now)
        #expect(request.question == "Dinner at 8?")
        #expect(request.options == ["accept", "decline"])
        #expect(request.members.map(\.userID) == ["u1", "u2", "u3"])
        #expect(request.hostUserID == "u1")
        #expect(request.closesAt == 1_790_000_600)
        #expect(request.liveActivity?.attributesType == "PollAttributes")
    }

    @Test(
        "a refused vote names its field",
        arguments: [
            ("{}", "option", "missing_field"),
            (#"{"option": 1}"#, "option", "invalid_option"),
            (#"{"option": "a", "why": "x"}"#, "why", "unknown_field"),
        ]
    )
    func refusedVote(body: String, field: String, code: String) throws {
        let error = #expect(throws: PollError.self) { try PollInput.parseVote(Array(body.utf8)) }
        #expect(error?.field == field)
        #expect(error?.code == code)
    }
}
