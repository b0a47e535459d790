import HeraldCore
import HeraldFeature

/// What `GET /v1/openapi.json` says of the Live Activities routes (``LiveActivityRoutes``,
/// ``ClientLiveActivityRoutes``).
enum LiveActivityAPI {
    static let idParameter = APIParameter("The activity's id (a UUID), as its POST answered.", APISchema.uuid)
    static let environment = APISchema.oneOf(["production", "sandbox"])
    static let name = APISchema.string(maxLength: LiveActivityLimits.maximumNameBytes)
    /// Unix seconds or an RFC 3339 time.
    static let time: JSONValue = ["anyOf": [APISchema.integer(0...99_999_999_999), APISchema.dateTime]]
    static let alert = APISchema.object(
        [
            "title": APISchema.string(maxLength: LiveActivityLimits.maximumAlertCharacters),
            "body": APISchema.string(maxLength: LiveActivityLimits.maximumAlertCharacters),
        ],
        closed: true
    )
    static let states = LiveActivityState.allCases.map(\.rawValue)

    static let audience: JSONValue = [
        "description": "Who gets the push-to-start: tokens, users, tags (any or all) or everyone.",
        "oneOf": [
            APISchema.object(["tokens": APISchema.array(APISchema.token, minItems: 1)], closed: true),
            APISchema.object(["users": APISchema.array(name, minItems: 1)], closed: true),
            APISchema.object(
                [
                    "tags": [
                        "oneOf": [
                            APISchema.object(["any": APISchema.array(name, minItems: 1)], closed: true),
                            APISchema.object(["all": APISchema.array(name, minItems: 1)], closed: true),
                        ]
                    ]
                ],
                closed: true
            ),
            APISchema.object(["all": ["const": true]], closed: true),
        ],
    ]

    static let instance = APISchema.named(
        "LiveActivityInstance",
        APISchema.object([
            "activity_id": APISchema.string,
            "user_id": APISchema.string,
            "device_token_prefix": APISchema.nullable(APISchema.string),
            "update_token_prefix": APISchema.nullable(APISchema.string),
            "state": APISchema.oneOf(["active", "ended", "dismissed"]),
            "unreachable": APISchema.boolean,
            "created_at": APISchema.dateTime,
            "updated_at": APISchema.dateTime,
        ])
    )

    static let delivery = APISchema.object([
        "at": APISchema.dateTime,
        "event": APISchema.string,
        "route": APISchema.string,
        "token_prefix": APISchema.nullable(APISchema.string),
        "status": APISchema.nullable(APISchema.integer),
        "reason": APISchema.nullable(APISchema.string),
        "apns_id": APISchema.nullable(APISchema.string),
    ])

    static let activity = APISchema.named(
        "LiveActivity",
        APISchema.object(
            [
                "id": APISchema.uuid,
                "app": APISchema.string,
                "environment": environment,
                "state": APISchema.oneOf(states),
                "start": APISchema.oneOf(["push", "app"]),
                "failure_reason": APISchema.nullable(APISchema.string),
                "attributes_type": APISchema.string,
                "attributes": APISchema.anyObject,
                "id_attribute": APISchema.string,
                "content_state": APISchema.anyObject,
                "alert": APISchema.nullable(APISchema.object(["title": APISchema.string, "body": APISchema.string])),
                "audience": APISchema.anyObject,
                "users": APISchema.array(APISchema.string),
                "channel_id": APISchema.nullable(APISchema.string),
                "channel_created": APISchema.boolean,
                "request_update_token": APISchema.boolean,
                "stale_date": APISchema.nullable(APISchema.dateTime),
                "relevance_score": APISchema.nullable(APISchema.number),
                "start_at": APISchema.nullable(APISchema.dateTime),
                "end_at": APISchema.nullable(APISchema.dateTime),
                "started_at": APISchema.nullable(APISchema.dateTime),
                "ended_at": APISchema.nullable(APISchema.dateTime),
                "created_at": APISchema.dateTime,
                "updated_at": APISchema.dateTime,
                "last_timestamp": APISchema.nullable(APISchema.integer),
                "instances": APISchema.array(instance),
                "deliveries": APISchema.array(delivery),
            ],
            required: [
                "id", "app", "environment", "state", "start", "attributes_type", "attributes", "content_state",
                "audience", "users", "created_at", "updated_at",
            ]
        )
    )

    /// What one of its users reads (`/v1/client`).
    static let memberActivity = APISchema.named(
        "LiveActivityForMember",
        APISchema.object(
            [
                "id": APISchema.uuid,
                "app": APISchema.string,
                "state": APISchema.oneOf(states),
                "start": APISchema.oneOf(["push", "app"]),
                "attributes_type": APISchema.string,
                "attributes": APISchema.anyObject,
                "content_state": APISchema.anyObject,
                "stale_date": APISchema.nullable(APISchema.dateTime),
                "start_at": APISchema.nullable(APISchema.dateTime),
                "end_at": APISchema.nullable(APISchema.dateTime),
                "started_at": APISchema.nullable(APISchema.dateTime),
                "ended_at": APISchema.nullable(APISchema.dateTime),
                "updated_at": APISchema.dateTime,
            ],
            required: ["id", "app", "state", "start", "attributes_type", "attributes", "content_state", "updated_at"]
        )
    )

    static let pushToStartToken = APISchema.named(
        "PushToStartToken",
        APISchema.object(
            [
                "token_prefix": APISchema.string,
                "app": APISchema.string,
                "environment": environment,
                "attributes_type": APISchema.string,
                "user_id": APISchema.nullable(APISchema.string),
                "status": APISchema.string,
                "invalid_reason": APISchema.nullable(APISchema.string),
            ],
            required: ["token_prefix", "app", "environment", "attributes_type", "status"]
        )
    )

    static let routeCounts = APISchema.object([
        "routes": APISchema.object([
            "broadcast": APISchema.integer, "pending": APISchema.integer, "silent": APISchema.integer,
            "update_token": APISchema.integer,
        ])
    ])

    static let members = APISchema.array(
        APISchema.object(
            [
                "user_id": name,
                "name": APISchema.string(maxLength: LiveActivityLimits.maximumMemberNameCharacters),
            ],
            closed: true
        ),
        maxItems: LiveActivityLimits.memberCount.upperBound,
        minItems: LiveActivityLimits.memberCount.lowerBound
    )

    static let duration = APISchema.string(description: "A duration from 0s to 8h: \"5m\", \"90s\", \"1h30m\".")

    static let create = APIOperation(
        "Create a Live Activity",
        description: "Starts it by push-to-start on its audience's devices (now or at start_at), or is started by "
            + "the app itself (start: app). A repeated id with the same body answers 200 with the same activity.",
        request: .json(
            "The activity.",
            APISchema.object(
                [
                    "id": APISchema.uuid,
                    "app": name,
                    "environment": environment,
                    "attributes_type": name,
                    "attributes": APISchema.anyObject,
                    "id_attribute": name,
                    "content_state": APISchema.anyObject,
                    "alert": alert,
                    "audience": audience,
                    "channel": [
                        "oneOf": [
                            APISchema.object(
                                ["create": ["const": true], "storage_policy": APISchema.integer(0...1)],
                                required: ["create"],
                                closed: true
                            ),
                            APISchema.object(["id": APISchema.string(maxLength: 255)], closed: true),
                        ]
                    ],
                    "request_update_token": APISchema.boolean,
                    "stale_date": time,
                    "relevance_score": APISchema.number,
                    "start_at": time,
                    "end_at": time,
                    "start": APISchema.oneOf(["push", "app"]),
                    "members": members,
                    "board": APISchema.object(
                        [
                            "arrival_alert": alert,
                            "end_when_all_arrived": duration,
                            "nudge": APISchema.object(["after": duration, "alert": alert], closed: true),
                        ],
                        required: [],
                        closed: true
                    ),
                ],
                required: ["attributes_type", "content_state"],
                closed: true
            ),
            example: [
                "attributes_type": "LoanAttributes", "attributes": ["product": "Mortgage"],
                "content_state": ["step": 1, "title": "Checking your data"],
                "alert": ["title": "Your application", "body": "We are checking your data"],
                "audience": ["users": ["ann"]],
            ]
        ),
        responses: [
            201: .json(
                "The activity.",
                activity,
                example: APISchema.example(
                    #"{"alert":null,"app":"com.example.app","attributes":{"heraldID":"01a250a5-d1e5-7728-b70c-424eec377653","product":"Mortgage"},"attributes_type":"LoanAttributes","audience":{"users":["ann"]},"channel_created":false,"channel_id":null,"content_state":{"step":1,"title":"Checking your data"},"created_at":"2026-12-07T13:16:14Z","end_at":null,"ended_at":null,"environment":"production","failure_reason":null,"id":"01a250a5-d1e5-7728-b70c-424eec377653","id_attribute":"heraldID","last_timestamp":0,"relevance_score":null,"request_update_token":true,"stale_date":null,"start":"app","start_at":null,"started_at":"2026-12-07T13:16:14Z","state":"started","updated_at":"2026-12-07T13:16:14Z","users":["ann"]}"#
                ),
                links: APILink.byID([
                    "GET /v1/live-activities/{id}", "POST /v1/live-activities/{id}/update",
                    "POST /v1/live-activities/{id}/end", "DELETE /v1/live-activities/{id}",
                    "POST /v1/live-activities/{id}/instances",
                ])
            ),
            200: .json("The activity created earlier with this id.", activity),
        ]
    )

    static let list = APIOperation(
        "List Live Activities",
        description: "Newest first.",
        parameters: [
            "user_id": APIParameter("Only activities of this user.", name),
            "state": APIParameter("Only activities in this state.", APISchema.oneOf(states)),
            "attributes_type": APIParameter("Only activities of this attributes type.", name),
        ],
        responses: [200: .json("A page of activities.", APISchema.page("live_activities", activity))]
    )

    static let read = APIOperation(
        "Read a Live Activity",
        description: "With its instances and its last 100 deliveries (each push, its route and APNs' answer).",
        parameters: ["id": idParameter],
        responses: [200: .json("The activity.", activity)]
    )

    static let cancel = APIOperation(
        "Cancel a scheduled Live Activity",
        description: "409 once it started: end it instead.",
        parameters: ["id": idParameter],
        responses: [200: .json("The cancelled activity.", activity)]
    )

    static func send(_ event: LiveActivityUpdate.Event) -> APIOperation {
        var fields: [String: JSONValue] = [
            "content_state": APISchema.anyObject,
            "alert": alert,
            "stale_date": time,
            "relevance_score": APISchema.number,
            "priority": ["enum": [5, 10]],
            "expiration": APISchema.integer(0...Int64(UInt32.max)),
        ]
        if event == .end { fields["dismissal_date"] = time }
        return APIOperation(
            event == .update ? "Update a Live Activity" : "End a Live Activity",
            description: "Sent along each instance's route: its update token, a silent push until the user allows "
                + "updates, the activity's broadcast channel, or kept pending until an instance is reported.",
            parameters: ["id": idParameter],
            request: .json(
                event == .update ? "The new content state." : "The final content state (the latest when left out).",
                APISchema.object(fields, required: event == .update ? ["content_state"] : [], closed: true),
                example: ["content_state": ["step": 2, "title": "Valuing the house"]]
            ),
            responses: [202: .json("How many instances each route took.", routeCounts)]
        )
    }

    static let instanceFields: [String: JSONValue] = [
        "activity_id": name,
        "device_token": APISchema.token,
        "update_token": APISchema.token,
        "state": APISchema.oneOf(["active", "ended", "dismissed"]),
    ]

    static let backendInstance = APIOperation(
        "Report an instance through the app's backend",
        description: "As the client route, for user_id: 404 unless a user of the activity, 403 not_your_instance, "
            + "409 too_many_instances.",
        parameters: ["id": idParameter],
        request: .json(
            "Where the activity runs.",
            APISchema.object(
                instanceFields.merging(["user_id": name]) { first, _ in first },
                required: ["user_id", "activity_id"],
                closed: true
            ),
            example: ["user_id": "ann", "activity_id": "ios-activity-id"]
        ),
        responses: [201: .json("A new instance.", instance), 200: .json("The instance, updated.", instance)]
    )

    static let clientInstance = APIOperation(
        "Report where an activity of the user runs",
        description: "A client token of one of the activity's users; the activity's latest update goes to a new "
            + "instance at once.",
        parameters: ["id": idParameter],
        request: .json(
            "The iOS activity's id and its tokens.",
            APISchema.object(instanceFields, required: ["activity_id"], closed: true),
            example: ["activity_id": "ios-activity-id", "device_token": .string(String(repeating: "52", count: 32))]
        ),
        responses: [201: .json("A new instance.", instance), 200: .json("The instance, updated.", instance)]
    )

    static let pushToStartFields: [String: JSONValue] = [
        "app": name, "environment": environment, "attributes_type": name, "token": APISchema.token,
    ]

    static func putToken(client: Bool) -> APIOperation {
        APIOperation(
            client ? "Register the user's push-to-start token" : "Register a user's push-to-start token",
            description: "201 when new to the user, 200 when the user had it; past HERALD_CLIENT_MAX_DEVICES the "
                + "least recently registered is evicted.",
            parameters: client ? [:] : ["user_id": APIParameter("The user's id.", name)],
            request: .json(
                "The token iOS gave for an attributes type.",
                APISchema.object(pushToStartFields, required: ["attributes_type", "token"], closed: true),
                example: ["attributes_type": "LoanAttributes", "token": .string(String(repeating: "51", count: 32))]
            ),
            responses: [201: .json("New to the user.", pushToStartToken), 200: .json("Known.", pushToStartToken)]
        )
    }

    static let memberRead = APIOperation(
        "Read an activity of the user",
        description: "What its Lock Screen shows; an ETag, and 304 to If-None-Match when unchanged.",
        parameters: ["id": idParameter],
        responses: [200: .json("The activity.", memberActivity), 304: .empty("Unchanged.")]
    )

    static let upcoming = APIOperation(
        "What is coming up for the user",
        description: "The user's scheduled and started activities and open polls in one list, soonest first (at "
            + "most 50); an ETag, and 304 to If-None-Match when unchanged.",
        responses: [
            200: .json(
                "The list.",
                APISchema.object([
                    "items": APISchema.array(
                        APISchema.object(
                            [
                                "type": APISchema.oneOf(["live_activity", "poll"]),
                                "at": APISchema.nullable(APISchema.dateTime),
                                "live_activity": memberActivity,
                                "poll": APISchema.anyObject,
                            ],
                            required: ["type", "at"]
                        )
                    )
                ])
            ),
            304: .empty("Unchanged."),
        ]
    )
}
