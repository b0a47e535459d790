import APNs
import HeraldCore
import HeraldFeature
import Notifications

/// What `GET /v1/openapi.json` says of the channel routes: their schemas, read from
/// ``ChannelInput`` and the bodies they answer (``ChannelBody``, ``ChannelListBody``,
/// ``BroadcastBody``).
extension ChannelRoutes {
    // MARK: Answers

    static let environmentSchema = APISchema.oneOf(["production", "sandbox"])

    static let storagePolicySchema: JSONValue = [
        "type": "integer",
        "enum": [0, 1],
        "description": "0: APNs stores no message (frequent updates); 1: APNs keeps the latest.",
    ]

    /// A channel (``ChannelBody``).
    static let channelSchema = APISchema.named(
        "Channel",
        APISchema.object([
            "id": APISchema.string(description: "APNs' base64 channel id."),
            "app": APISchema.string,
            "environment": environmentSchema,
            "storage_policy": storagePolicySchema,
        ])
    )

    /// `GET /v1/channels`' answer (``ChannelListBody``): every channel of the app, unpaged.
    static let listSchema = APISchema.object([
        "app": APISchema.string,
        "environment": environmentSchema,
        "channels": APISchema.array(
            APISchema.object(["id": APISchema.string(description: "APNs' base64 channel id.")])
        ),
        "next_cursor": APISchema.nullable(APISchema.string),
    ])

    /// A broadcast's answer (``BroadcastBody``).
    static let broadcastSchema = APISchema.object([
        "apns_request_id": APISchema.nullable(APISchema.uuid),
        "apns_unique_id": APISchema.nullable(APISchema.string),
        "timestamp": ["type": "integer", "description": "The timestamp sent, Unix seconds."],
    ])

    // MARK: Requests

    static let appSchema = APISchema.nullable(APISchema.string(maxLength: ChannelInput.maximumNameBytes))

    /// `POST /v1/channels`' body (``ChannelInput/create(_:)``).
    static let createSchema = APISchema.object(
        [
            "app": appSchema,
            "environment": APISchema.nullable(environmentSchema),
            "storage_policy": storagePolicySchema,
        ],
        required: ["storage_policy"],
        closed: true
    )

    /// `POST /v1/channels/{id}/broadcast`'s body (``ChannelInput/broadcast(_:)``).
    static let broadcastRequestSchema: JSONValue = {
        let time = APISchema.nullable(NotificationRoutes.timeSchema)
        let text = ["type": "string", "maxLength": .integer(Int64(ChannelInput.maximumTextBytes))] as JSONValue
        return APISchema.object(
            [
                "app": appSchema,
                "environment": APISchema.nullable(environmentSchema),
                "event": APISchema.oneOf(["update", "end"]),
                "content_state": [
                    "type": "object", "description": "The Live Activity's ContentState, as the app decodes it.",
                ],
                "alert": APISchema.nullable(
                    APISchema.object(
                        [
                            "title": text,
                            "body": text,
                            "sound": APISchema.nullable(APISchema.string(maxLength: ChannelInput.maximumNameBytes)),
                        ],
                        required: ["body", "title"],
                        closed: true
                    )
                ),
                "stale_date": time,
                "dismissal_date": time,
                "relevance_score": APISchema.nullable(APISchema.number),
                "timestamp": time,
                "priority": APISchema.nullable(["type": "integer", "enum": [10, 5, 1]]),
                "expiration": [
                    "description": "0 (the default): APNs does not store it; else when APNs stops trying.",
                    "anyOf": [NotificationRoutes.timeSchema, ["type": "null"]],
                ],
            ],
            required: ["content_state", "event"],
            closed: true
        )
    }()

    // MARK: Operations

    static let idParameter = APIParameter("The channel id APNs gave, percent-encoded, or in base64url.")
    static let targetParameters: [String: APIParameter] = [
        "app": APIParameter("The app (a configured bundle ID); left out: the first configured app."),
        "environment": APIParameter("production or sandbox; left out: the app's default.", environmentSchema),
    ]

    static let createOperation = APIOperation(
        "Create a broadcast channel",
        request: .json(
            "The channel's app and storage policy.",
            createSchema,
            example: ["app": "com.example.app", "storage_policy": 0]
        ),
        responses: [
            201: .json(
                "Created: the channel; Location says where.",
                channelSchema,
                example: APISchema.example(
                    #"{"app":"com.example.app","environment":"production","id":"bDkqoH3jAVl2cVIVX2gP8Q==","storage_policy":0}"#
                )
            )
        ]
    )

    static let listOperation = APIOperation(
        "List broadcast channels",
        description: "The channels of the app and environment that APNs lists, in id order, paged as every "
            + "list (limit, cursor, next_cursor).",
        parameters: targetParameters,
        responses: [200: .json("The channels.", listSchema)]
    )

    static let readOperation = APIOperation(
        "Read a broadcast channel",
        parameters: targetParameters.merging(["id": idParameter]) { first, _ in first },
        responses: [200: .json("The channel and its storage policy.", channelSchema)]
    )

    static let deleteOperation = APIOperation(
        "Delete a broadcast channel",
        parameters: targetParameters.merging(["id": idParameter]) { first, _ in first },
        responses: [204: .empty("Deleted.")]
    )

    static let broadcastOperation = APIOperation(
        "Broadcast a Live Activity update",
        description: "Sends the update (or end) to every Live Activity subscribed to the channel.",
        parameters: ["id": idParameter],
        request: .json(
            "The Live Activity update.",
            broadcastRequestSchema,
            example: ["event": "update", "content_state": ["score": "2-1"], "relevance_score": 50]
        ),
        responses: [200: .json("APNs accepted it.", broadcastSchema)]
    )
}
