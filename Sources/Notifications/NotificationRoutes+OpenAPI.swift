import APNs
import Audiences
public import HeraldCore
import HeraldFeature

/// What `GET /v1/openapi.json` says of the notification routes: their schemas, read from the
/// parsers (``NotificationRequest``) and the bodies they answer (``NotificationBody``,
/// ``NotificationSummaryBody``, ``AcceptedBody``, ``DeadTokenBody``).
extension NotificationRoutes {
    // MARK: Shared values

    /// `production` or `sandbox`, as the bodies write an APNs environment.
    public static let environmentSchema = APISchema.oneOf(["production", "sandbox"])

    /// A time given in a query or a body: an RFC 3339 time or Unix seconds.
    public static let timeSchema: JSONValue = [
        "anyOf": [APISchema.dateTime, APISchema.integer(0...NotificationLimits.millisecondsThreshold)]
    ]

    /// An audience as a request gives it (`POST /v1/notifications`, the wake schedules): exactly
    /// one of its four shapes, each checked as ``Audiences/Audience`` parses it.
    public static let audienceRequestSchema = APISchema.named(
        "AudienceRequest",
        [
            "description": """
            Who a send goes to, exactly one of: the tokens listed, the active devices of users, \
            of tags (any or all of them) or all active devices.
            """,
            "oneOf": [
                APISchema.object(
                    ["tokens": uniqueArray(APISchema.token, maxItems: AudienceLimits.maximumTokens)],
                    closed: true
                ),
                APISchema.object(
                    [
                        "users": uniqueArray(
                            APISchema.string(maxLength: AudienceLimits.maximumUserIDBytes),
                            maxItems: AudienceLimits.maximumUsers
                        )
                    ],
                    closed: true
                ),
                APISchema.object(
                    [
                        "tags": [
                            "oneOf": [
                                APISchema.object(["any": tagArray], closed: true),
                                APISchema.object(["all": tagArray], closed: true),
                            ]
                        ]
                    ],
                    closed: true
                ),
                APISchema.object(["all": ["const": true]], closed: true),
            ],
        ]
    )

    /// An audience as an answer shows it: the one member it was given with.
    public static let audienceSchema = APISchema.named(
        "Audience",
        [
            "description": "Who the send goes to, as it was given: exactly one of tokens, users, tags or all.",
            "oneOf": [
                APISchema.object(["tokens": APISchema.array(APISchema.string)]),
                APISchema.object(["users": APISchema.array(APISchema.string)]),
                APISchema.object([
                    "tags": [
                        "oneOf": [
                            APISchema.object(["any": APISchema.array(APISchema.string)]),
                            APISchema.object(["all": APISchema.array(APISchema.string)]),
                        ]
                    ]
                ]),
                APISchema.object(["all": ["const": true]]),
            ],
        ]
    )

    /// 1 to 50 tags of 1 to 64 characters, none twice.
    static let tagArray = uniqueArray(
        APISchema.string(
            maxLength: AudienceLimits.tagLength.upperBound,
            minLength: AudienceLimits.tagLength.lowerBound
        ),
        maxItems: AudienceLimits.maximumTags
    )

    /// An array of 1 to `maxItems` items, none twice.
    static func uniqueArray(_ items: JSONValue, maxItems: Int) -> JSONValue {
        guard case .object(var schema) = APISchema.array(items, maxItems: maxItems, minItems: 1) else { return items }
        schema["uniqueItems"] = true
        return .object(schema)
    }

    static let notificationStatusSchema = APISchema.oneOf(NotificationStatus.allCases.map(\.rawValue))
    static let audienceKindSchema = APISchema.oneOf(AudienceKind.allCases.map(\.rawValue))
    static let pushTypeSchema = APISchema.oneOf(APNSPushType.allCases.map(\.headerValue))

    // MARK: Request

    /// `POST /v1/notifications`' body (``NotificationRequest/parse(_:now:)``).
    static let createRequestSchema: JSONValue = {
        let name = APISchema.string(maxLength: NotificationLimits.maximumNameBytes)
        guard
            case .object(var schema) = APISchema.object(
                [
                    "app": name,
                    "environment": environmentSchema,
                    "tokens": uniqueArray(APISchema.token, maxItems: NotificationLimits.maximumTokens),
                    "audience": audienceRequestSchema,
                    "push_type": pushTypeSchema,
                    "priority": ["type": "integer", "enum": [10, 5, 1]],
                    "expiration": [
                        "description": "0: do not store; else when APNs stops trying, Unix seconds or RFC 3339.",
                        "anyOf": [APISchema.integer(0...EpochTime.maximumSeconds), APISchema.dateTime],
                    ],
                    "collapse_id": APISchema.nullable(APISchema.string(maxLength: APNSRequest.maxCollapseIDSize)),
                    "topic": name,
                    "payload": [
                        "type": "object",
                        "description": "The APNs payload, 4096 bytes at most (5120 for voip).",
                    ],
                    "send_at": [
                        "description": "When to send, up to 366 days ahead; left out: now.",
                        "anyOf": [
                            APISchema.dateTime, APISchema.integer(0...NotificationLimits.millisecondsThreshold),
                        ],
                    ],
                ],
                required: ["payload"],
                closed: true,
                description: "tokens or an audience, exactly one of the two, and the payload."
            )
        else { return [:] }
        schema["oneOf"] = [["required": ["tokens"]], ["required": ["audience"]]]
        return .object(schema)
    }()

    static let createExample: JSONValue = [
        "app": "com.example.app",
        "tokens": [.string(String(repeating: "ab", count: 32))],
        "payload": ["aps": ["alert": ["title": "Hello", "body": "Your order shipped."]]],
    ]

    // MARK: Answers

    /// A notification's own fields, as a list shows them (``NotificationSummaryBody``).
    static let summaryProperties: [String: JSONValue] = [
        "id": APISchema.uuid,
        "app": APISchema.string,
        "environment": environmentSchema,
        "push_type": pushTypeSchema,
        "topic": APISchema.string,
        "status": notificationStatusSchema,
        "failure_reason": APISchema.string(description: "Why it failed, when it did."),
        "send_at": APISchema.dateTime,
        "created_at": APISchema.dateTime,
        "updated_at": APISchema.dateTime,
        "tokens": APISchema.integer,
        "audience_kind": audienceKindSchema,
    ]

    static let summaryRequired = summaryProperties.keys.filter { $0 != "failure_reason" }.sorted()

    static let summarySchema = APISchema.named(
        "NotificationSummary",
        APISchema.object(summaryProperties, required: summaryRequired)
    )

    /// One device's result (``ResultBody``).
    static let resultSchema = APISchema.object(
        [
            "token": APISchema.string,
            "status": APISchema.oneOf(DeliveryStatus.allCases.map(\.rawValue)),
            "reason": APISchema.string,
            "apns_id": APISchema.string,
            "invalid_at": APISchema.dateTime,
            "attempts": APISchema.integer,
            "updated_at": APISchema.dateTime,
        ],
        required: ["attempts", "status", "token", "updated_at"]
    )

    /// A notification with its progress and counts (``NotificationBody``); `results` and
    /// `next_cursor` when a page of results was asked for, `audience` when resolved at send time.
    static let notificationSchema = APISchema.named(
        "Notification",
        APISchema.object(
            summaryProperties.merging(
                [
                    "audience": audienceSchema,
                    "progress": APISchema.object([
                        "resolved": APISchema.integer,
                        "sent": APISchema.integer,
                        "pending": APISchema.integer,
                        "failed": APISchema.integer,
                        "resolving": APISchema.boolean,
                    ]),
                    "counts": APISchema.object(
                        Dictionary(
                            uniqueKeysWithValues: DeliveryStatus.allCases.map { ($0.rawValue, APISchema.integer) }
                        )
                    ),
                    "results": APISchema.array(resultSchema),
                    "next_cursor": APISchema.nullable(APISchema.string),
                ],
                uniquingKeysWith: { first, _ in first }
            ),
            required: summaryRequired + ["counts", "progress"]
        )
    )

    /// `202`: the notification stored (``AcceptedBody``).
    static let acceptedSchema = APISchema.object([
        "id": APISchema.uuid,
        "status": notificationStatusSchema,
        "send_at": APISchema.dateTime,
        "tokens": APISchema.integer,
        "audience_kind": audienceKindSchema,
    ])

    static let deadTokenSchema = APISchema.object(
        [
            "app": APISchema.string,
            "environment": environmentSchema,
            "token": APISchema.string,
            "reason": APISchema.string,
            "invalid_at": APISchema.dateTime,
            "recorded_at": APISchema.dateTime,
            "notification_id": APISchema.uuid,
        ],
        required: ["app", "environment", "reason", "recorded_at", "token"]
    )

    // MARK: Operations

    static let idParameter = APIParameter("The notification's id, as the POST answered it.", APISchema.uuid)
    static let appParameter = APIParameter("Only this app's (a configured bundle ID).")

    static let createOperation = APIOperation(
        "Send a notification",
        description: """
            Stores the notification and answers 202; its jobs send it, at send_at when given. With \
            wait=true (at most 1,000 tokens, no send_at, no audience resolved at send time) it \
            answers 200 once every token has its result.
            """,
        parameters: [
            "wait": APIParameter("Answer once every token has its result (200) instead of at once.", APISchema.boolean)
        ],
        request: .json("The notification.", createRequestSchema, example: createExample),
        responses: [
            200: .json("With wait=true: sent, with every token's result.", notificationSchema),
            202: .json(
                "Stored; Location says where to read it.",
                acceptedSchema,
                example: APISchema.example(
                    #"{"audience_kind":"tokens","id":"01a250a5-d1f5-7e7c-a330-60f40fe95e5c","send_at":"2026-12-07T13:16:14Z","status":"scheduled","tokens":1}"#
                ),
                links: APILink.byID(["GET /v1/notifications/{id}", "DELETE /v1/notifications/{id}"])
            ),
        ]
    )

    static let listOperation = APIOperation(
        "List notifications",
        description: "Newest first.",
        parameters: [
            "status": APIParameter("Only those with this status.", notificationStatusSchema),
            "app": appParameter,
            "created_after": APIParameter("Only those created after this time.", timeSchema),
            "created_before": APIParameter("Only those created before this time.", timeSchema),
        ],
        responses: [200: .json("A page of notifications.", APISchema.page("notifications", summarySchema))]
    )

    static let readOperation = APIOperation(
        "Read a notification",
        description: "Its status, audience, progress and counts, and a page of its results.",
        parameters: ["id": idParameter],
        responses: [200: .json("The notification and a page of its results.", notificationSchema)]
    )

    static let cancelOperation = APIOperation(
        "Cancel a scheduled notification",
        description: "409 once it started sending.",
        parameters: ["id": idParameter],
        responses: [200: .json("The notification, cancelled.", notificationSchema)]
    )

    static let deadTokensOperation = APIOperation(
        "List dead tokens",
        description: "The tokens APNs called dead, oldest first.",
        parameters: [
            "app": appParameter,
            "environment": APIParameter("Only this environment's.", environmentSchema),
            "since": APIParameter("Only those recorded since this time.", timeSchema),
        ],
        responses: [200: .json("A page of dead tokens.", APISchema.page("dead_tokens", deadTokenSchema))]
    )
}
