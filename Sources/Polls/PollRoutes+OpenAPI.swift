import HeraldCore
import HeraldFeature

/// What `GET /v1/openapi.json` says of the polls routes.
extension PollRoutes {
    static let idParameter = APIParameter("The poll's id, as its POST answered.", APISchema.uuid)

    static let tallyOption = APISchema.object([
        "option": APISchema.string, "count": APISchema.integer, "names": APISchema.array(APISchema.string),
    ])

    static let tally = APISchema.named(
        "PollTally",
        APISchema.object([
            "question": APISchema.string,
            "options": APISchema.array(tallyOption),
            "voted": APISchema.integer,
            "total": APISchema.integer,
            "final": APISchema.boolean,
        ])
    )

    static let poll = APISchema.named(
        "Poll",
        APISchema.object([
            "id": APISchema.uuid,
            "app": APISchema.string,
            "environment": APISchema.oneOf(["production", "sandbox"]),
            "question": APISchema.string,
            "options": APISchema.array(APISchema.string),
            "members": APISchema.array(
                APISchema.object([
                    "user_id": APISchema.string, "name": APISchema.string,
                    "option": APISchema.nullable(APISchema.string),
                ])
            ),
            "tally": tally,
            "final": APISchema.boolean,
            "host_user_id": APISchema.nullable(APISchema.string),
            "closes_at": APISchema.nullable(APISchema.integer),
            "live_activity_id": APISchema.nullable(APISchema.uuid),
            "created_at": APISchema.dateTime,
            "finalized_at": APISchema.nullable(APISchema.dateTime),
        ])
    )

    /// What a member reads: the tally and the member's own vote.
    static let memberTally = APISchema.named(
        "PollMemberTally",
        APISchema.object(
            [
                "id": APISchema.uuid,
                "question": APISchema.string,
                "options": APISchema.array(tallyOption),
                "voted": APISchema.integer,
                "total": APISchema.integer,
                "final": APISchema.boolean,
                "my_option": APISchema.nullable(APISchema.string),
            ],
            required: ["id", "question", "options", "voted", "total", "final"]
        )
    )

    static let create = APIOperation(
        "Create a poll",
        description: "With live_activity, Herald starts it on the members' devices with a channel of its own and "
            + "broadcasts the tally as votes arrive.",
        request: .json(
            "The question, its options and the members.",
            APISchema.object(
                [
                    "app": APISchema.string(maxLength: 255),
                    "environment": APISchema.oneOf(["production", "sandbox"]),
                    "question": APISchema.string(maxLength: PollLimits.maximumQuestionBytes),
                    "options": APISchema.array(
                        APISchema.string(maxLength: PollLimits.maximumOptionBytes),
                        maxItems: PollLimits.options.upperBound,
                        minItems: PollLimits.options.lowerBound
                    ),
                    "members": APISchema.array(
                        APISchema.object(
                            [
                                "user_id": APISchema.string(maxLength: PollLimits.maximumUserIDBytes),
                                "name": APISchema.string(maxLength: PollLimits.maximumNameBytes),
                            ],
                            closed: true
                        ),
                        maxItems: PollLimits.members.upperBound,
                        minItems: PollLimits.members.lowerBound
                    ),
                    "host_user_id": APISchema.string(maxLength: PollLimits.maximumUserIDBytes),
                    "closes_at": APISchema.integer(0...100_000_000_000),
                    "live_activity": APISchema.object(
                        [
                            "attributes_type": APISchema.string(maxLength: 255),
                            "attributes": APISchema.anyObject,
                            "content_state": APISchema.anyObject,
                            "alert": APISchema.anyObject,
                        ],
                        required: ["attributes_type", "content_state", "alert"],
                        closed: true
                    ),
                ],
                required: ["question", "options", "members"],
                closed: true
            ),
            example: [
                "question": "Dinner at 8?", "options": ["accept", "decline"], "host_user_id": "ann",
                "members": [["user_id": "ann", "name": "Ann"], ["user_id": "bob", "name": "Bob"]],
            ]
        ),
        responses: [
            201: .json(
                "The poll.",
                poll,
                example: APISchema.example(
                    #"{"app":"com.example.app","closes_at":null,"created_at":"2026-12-07T13:16:14Z","environment":"production","final":false,"finalized_at":null,"host_user_id":"ann","id":"01a250a5-d1d7-72e9-b48a-436b955ac2ad","live_activity_id":null,"members":[{"name":"Ann","option":null,"user_id":"ann"},{"name":"Bob","option":null,"user_id":"bob"}],"options":["accept","decline"],"question":"Dinner at 8?","tally":{"final":false,"options":[{"count":0,"names":[],"option":"accept"},{"count":0,"names":[],"option":"decline"}],"question":"Dinner at 8?","total":2,"voted":0}}"#
                ),
                links: APILink.byID(["GET /v1/polls/{id}", "POST /v1/polls/{id}/finalize"])
            )
        ]
    )

    static let list = APIOperation(
        "List polls",
        description: "Newest first, each with its tally and the members' names.",
        responses: [200: .json("A page of polls.", APISchema.page("polls", poll))]
    )

    static let read = APIOperation(
        "Read a poll",
        parameters: ["id": idParameter],
        responses: [200: .json("The poll, its members' votes and the tally.", poll)]
    )

    static let finalize = APIOperation(
        "Finalize a poll early",
        description: "With the API key, or with the client token of the poll's host_user_id. The key gets the "
            + "whole poll, the host the tally as members read it; another member gets 403 not_host, anyone "
            + "else 404, and a final poll 409 poll_final.",
        parameters: ["id": idParameter],
        request: .json("No fields: send {} or nothing.", APISchema.object([:], closed: true), example: [:]),
        responses: [
            200: .json("The final poll (API key) or tally (host).", ["anyOf": [poll, memberTally]])
        ]
    )

    static let vote = APIOperation(
        "Vote, or change one's vote",
        description: "A member's client token; 409 poll_final once the poll is final; 404 for a non-member.",
        parameters: ["id": idParameter],
        request: .json(
            "One of the poll's options.",
            APISchema.object(["option": APISchema.string(maxLength: PollLimits.maximumOptionBytes)], closed: true),
            example: ["option": "accept"]
        ),
        responses: [200: .json("The tally after the vote.", memberTally)]
    )

    static let memberRead = APIOperation(
        "Read a poll's tally as a member",
        description: "For a widget or an App Intent: answers with an ETag, and 304 to If-None-Match when "
            + "nothing changed.",
        parameters: ["id": idParameter],
        responses: [200: .json("The tally and the member's own vote.", memberTally), 304: .empty("Unchanged.")]
    )
}
