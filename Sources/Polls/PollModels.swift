public import APNs
public import Foundation
public import HeraldCore

/// The Polls API's refusals (``PollError``).
public enum PollDomain: RefusalDomain {}

/// Why a Polls request was refused: invalid or too large input (naming the field), not found (no
/// poll has the id, or the caller is not one of its members), conflict (`poll_final`), and what
/// the Live Activity it starts refuses.
public typealias PollError = Refusal<PollDomain>

extension Refusal where Domain == PollDomain {
    /// No poll with this id, or one the caller is not a member of (the same answer).
    public static var notFound: PollError {
        PollError(
            .notFound,
            code: "not_found",
            message: "no poll has this id: create it with POST /v1/polls",
            field: "id"
        )
    }

    /// A vote or finalize for a poll that is final already.
    public static var final: PollError {
        PollError(
            .conflict,
            code: "poll_final",
            message: "the poll is final: its result no longer changes; read it with GET /v1/polls/{id}"
        )
    }
}

/// One member of a poll: who may vote, the name its tally shows, and the vote if cast.
public struct PollMember: Sendable, Hashable {
    public var userID: String
    public var name: String
    public var option: String?

    public init(userID: String, name: String, option: String? = nil) {
        self.userID = userID
        self.name = name
        self.option = option
    }
}

/// What a poll's Live Activity starts with (`live_activity` of the create body).
public struct PollLiveActivity: Sendable, Hashable {
    public var attributesType: String
    public var attributes: JSONValue
    public var contentState: JSONValue
    public var alert: JSONValue
}

/// A stored poll with its members and their votes.
public struct Poll: Sendable, Hashable {
    public var id: UUID
    public var app: String
    public var environment: APNSEnvironment
    public var question: String
    public var options: [String]
    public var members: [PollMember]
    public var hostUserID: String?
    public var closesAt: Date?
    /// The Live Activity started on the members' devices, if the poll asked for one.
    public var liveActivityID: UUID?
    /// The content state that activity started with; every broadcast adds `poll` to it.
    public var contentState: JSONValue?
    public var createdAt: Date
    public var finalizedAt: Date?

    public var isFinal: Bool { finalizedAt != nil }

    /// The tally: each option in order with its count and the names of who chose it.
    public var tally: PollTally {
        PollTally(
            question: question,
            options: options.map { option in
                let names = members.filter { $0.option == option }.map(\.name)
                return PollTally.Option(option: option, count: names.count, names: names)
            },
            voted: members.count { $0.option != nil },
            total: members.count,
            final: isFinal
        )
    }
}

/// `{"question", "options": [{"option", "count", "names"}], "voted", "total", "final"}`: what a
/// broadcast carries as `poll` and what the client read answers.
public struct PollTally: Sendable, Hashable, Encodable {
    public struct Option: Sendable, Hashable, Encodable {
        public var option: String
        public var count: Int
        public var names: [String]
    }

    public var question: String
    public var options: [Option]
    public var voted: Int
    public var total: Int
    public var final: Bool

    /// The tally as JSON, for a content state.
    public var json: JSONValue {
        .object([
            "question": .string(question),
            "options": .array(
                options.map { option in
                    .object([
                        "option": .string(option.option), "count": .integer(Int64(option.count)),
                        "names": .array(option.names.map(JSONValue.string)),
                    ])
                }
            ),
            "voted": .integer(Int64(voted)),
            "total": .integer(Int64(total)),
            "final": .bool(final),
        ])
    }
}
