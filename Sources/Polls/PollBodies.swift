import APNs
import Foundation
import HeraldCore

/// A poll as `POST /v1/polls`, `GET /v1/polls/{id}` and `/finalize` answer it: with the tally.
struct PollBody: Encodable, Sendable {
    struct Member: Encodable, Sendable {
        var userID: String
        var name: String
        var option: String?

        enum CodingKeys: String, CodingKey {
            case userID = "user_id"
            case name, option
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(userID, forKey: .userID)
            try container.encode(name, forKey: .name)
            try container.encode(option, forKey: .option)
        }
    }

    var poll: Poll

    enum CodingKeys: String, CodingKey {
        case id, app, environment, question, options, members, tally, final
        case hostUserID = "host_user_id"
        case closesAt = "closes_at"
        case liveActivityID = "live_activity_id"
        case createdAt = "created_at"
        case finalizedAt = "finalized_at"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(RequestIdentifier.lowercaseString(poll.id), forKey: .id)
        try container.encode(poll.app, forKey: .app)
        try container.encode(poll.environment.rawValue, forKey: .environment)
        try container.encode(poll.question, forKey: .question)
        try container.encode(poll.options, forKey: .options)
        try container.encode(
            poll.members.map { Member(userID: $0.userID, name: $0.name, option: $0.option) },
            forKey: .members
        )
        try container.encode(poll.tally, forKey: .tally)
        try container.encode(poll.isFinal, forKey: .final)
        try container.encode(poll.hostUserID, forKey: .hostUserID)
        try container.encode(poll.closesAt.map { EpochTime.seconds($0) }, forKey: .closesAt)
        try container.encode(poll.liveActivityID.map(RequestIdentifier.lowercaseString), forKey: .liveActivityID)
        try container.encode(poll.createdAt, forKey: .createdAt)
        try container.encode(poll.finalizedAt, forKey: .finalizedAt)
    }
}

/// What a member reads and a vote answers: `{"id", "question", "options": [{"option", "count",
/// "names"}], "voted", "total", "final"}`, and the member's own `my_option`.
struct PollTallyBody: Encodable, Sendable {
    var poll: Poll
    var userID: String?

    enum CodingKeys: String, CodingKey {
        case id, question, options, voted, total, final
        case myOption = "my_option"
    }

    func encode(to encoder: any Encoder) throws {
        let tally = poll.tally
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(RequestIdentifier.lowercaseString(poll.id), forKey: .id)
        try container.encode(tally.question, forKey: .question)
        try container.encode(tally.options, forKey: .options)
        try container.encode(tally.voted, forKey: .voted)
        try container.encode(tally.total, forKey: .total)
        try container.encode(tally.final, forKey: .final)
        if let userID {
            try container.encode(poll.members.first { $0.userID == userID }?.option, forKey: .myOption)
        }
    }
}
