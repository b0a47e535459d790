import HeraldCore
import HeraldFeature
import Notifications

/// What `GET /v1/openapi.json` says of the wake schedule routes: their schemas, read from the
/// parsers (``WakeScheduleRequest``, ``WakeSchedulePatch``) and the body they answer
/// (``WakeScheduleBody``).
extension WakeRoutes {
    // MARK: Answers

    static let modeSchema = APISchema.oneOf(WakeMode.allCases.map(\.rawValue))
    static let cloudKitEnvironmentSchema = APISchema.oneOf(WakeCloudKitEnvironment.allCases.map(\.rawValue))

    /// One run (``WakeRunBody``).
    static let runSchema = APISchema.object([
        "at": APISchema.dateTime,
        "mode": modeSchema,
        "status": APISchema.oneOf(["running", "retrying", "done", "failed"]),
        "started_at": APISchema.dateTime,
        "finished_at": APISchema.nullable(APISchema.dateTime),
        "devices": APISchema.integer,
        "sent": APISchema.integer,
        "skipped": APISchema.integer,
        "failed": APISchema.integer,
        "record_name": APISchema.nullable(APISchema.string),
        "error_codes": APISchema.array(APISchema.string),
        "error": APISchema.nullable(APISchema.string),
    ])

    /// A schedule (``WakeScheduleBody``): `every`, or `cron` and `timezone`; `app`,
    /// `environment`, `audience` and `data` in APNs mode, `cloudkit` in CloudKit mode; `runs` in
    /// `GET /v1/wake-schedules/{id}` only.
    static let scheduleSchema = APISchema.named(
        "WakeSchedule",
        APISchema.object(
            [
                "id": APISchema.uuid,
                "name": APISchema.string,
                "mode": modeSchema,
                "every": APISchema.string(description: "The interval, such as 1h30m (interval schedules)."),
                "cron": APISchema.string(description: "The cron expression (cron schedules)."),
                "timezone": APISchema.string(description: "The cron expression's time zone (cron schedules)."),
                "jitter": APISchema.string(description: "The largest random delay of a run, such as 5m (0s: none)."),
                "paused": APISchema.boolean,
                "app": APISchema.string,
                "environment": NotificationRoutes.environmentSchema,
                "audience": NotificationRoutes.audienceSchema,
                "data": APISchema.anyObject,
                "cloudkit": APISchema.object([
                    "container": APISchema.string,
                    "environment": cloudKitEnvironmentSchema,
                    "record_type": APISchema.string,
                    "field": APISchema.string,
                    "keep": APISchema.integer,
                ]),
                "next_run_at": APISchema.nullable(APISchema.dateTime),
                "last_run_at": APISchema.nullable(APISchema.dateTime),
                "created_at": APISchema.dateTime,
                "updated_at": APISchema.dateTime,
                "runs": APISchema.array(runSchema, maxItems: WakeLimits.keptRuns),
            ],
            required: [
                "id", "name", "mode", "jitter", "paused", "next_run_at", "last_run_at", "created_at", "updated_at",
            ]
        )
    )

    // MARK: Requests

    /// A duration such as `10m`, `1h` or `1h30m`.
    static let durationSchema: JSONValue = ["type": "string", "pattern": "^([0-9]+[smhd])+$", "maxLength": 32]

    /// The members both modes take and a change may give.
    static let commonProperties: [String: JSONValue] = [
        "name": APISchema.string(maxLength: WakeLimits.maximumNameLength),
        "every": [
            "type": "string", "pattern": "^([0-9]+[smhd])+$", "maxLength": 32,
            "description": "An interval from 10s to 366d, such as 1h (or give cron).",
        ],
        "cron": [
            "type": "string", "maxLength": 200,
            "description": "A 5-field cron expression, such as 0 * * * *; or give every.",
        ],
        "timezone": APISchema.nullable([
            "type": "string", "minLength": 1, "maxLength": 64,
            "description": "The cron expression's IANA time zone (with cron only; UTC when left out).",
        ]),
        "jitter": APISchema.nullable(durationSchema),
        "paused": APISchema.nullable(APISchema.boolean),
    ]

    /// `data`: custom top-level keys of the push, without `aps`, 2,048 bytes of JSON at most.
    static let dataSchema = APISchema.nullable([
        "type": "object",
        "not": ["required": ["aps"]],
        "description": "Custom top-level keys sent beside aps, 2,048 bytes of JSON at most.",
    ])

    /// `POST /v1/wake-schedules`' body: one of the two modes' members.
    static let createSchema: JSONValue = {
        let apns = APISchema.object(
            commonProperties.merging(
                [
                    "mode": ["const": "apns"],
                    "app": APISchema.nullable(APISchema.string(maxLength: 255)),
                    "environment": APISchema.nullable(APISchema.oneOf(["production", "sandbox", "development"])),
                    "audience": NotificationRoutes.audienceRequestSchema,
                    "data": dataSchema,
                ]
            ) { first, _ in first },
            required: ["audience", "mode", "name"],
            closed: true,
            description: "A background push to the audience's active devices."
        )
        let name = ["type": "string", "pattern": "^[A-Za-z][A-Za-z0-9_]*$", "maxLength": 255] as JSONValue
        let cloudkit = APISchema.object(
            commonProperties.merging(
                [
                    "mode": ["const": "cloudkit"],
                    "cloudkit": APISchema.object(
                        [
                            "container": [
                                "type": "string", "pattern": "^[!-.0-~]+$", "maxLength": 255,
                                "description": "The container id, such as iCloud.com.example.app.",
                            ],
                            "environment": cloudKitEnvironmentSchema,
                            "record_type": name,
                            "field": name,
                            "keep": APISchema.integer(
                                Int64(WakeLimits.keepRange.lowerBound)...Int64(WakeLimits.keepRange.upperBound)
                            ),
                        ],
                        required: ["container", "environment"],
                        closed: true
                    ),
                ]
            ) { first, _ in first },
            required: ["cloudkit", "mode", "name"],
            closed: true,
            description: "A record in the app's public CloudKit database."
        )
        return [
            "oneOf": [apns, cloudkit],
            "anyOf": [["required": ["every"]], ["required": ["cron"]]],
            "not": ["required": ["every", "cron"]],
        ]
    }()

    static let createExample: JSONValue = [
        "name": "hourly", "mode": "apns", "every": "1h", "jitter": "5m", "app": "com.example.app",
        "environment": "production", "audience": ["all": true], "data": ["kind": "refresh"],
    ]

    /// `PATCH /v1/wake-schedules/{id}`'s body: the members to change, at least one.
    static let patchSchema: JSONValue = {
        guard
            case .object(var schema) = APISchema.object(
                commonProperties.merging(
                    [
                        "name": APISchema.nullable(APISchema.string(maxLength: WakeLimits.maximumNameLength)),
                        "audience": NotificationRoutes.audienceRequestSchema,
                        "data": dataSchema,
                    ]
                ) { _, given in given },
                required: [],
                closed: true,
                description: "Each member given is changed (audience and data in APNs mode only)."
            )
        else { return [:] }
        schema["minProperties"] = 1
        schema["not"] = ["required": ["every", "cron"]]
        return .object(schema)
    }()

    // MARK: Operations

    static let idParameter = APIParameter("The schedule's id, as the POST answered it.", APISchema.uuid)

    static let createOperation = APIOperation(
        "Create a wake schedule",
        request: .json("The schedule.", createSchema, example: createExample),
        responses: [
            201: .json(
                "Created: the schedule; Location says where.",
                scheduleSchema,
                links: APILink.byID([
                    "GET /v1/wake-schedules/{id}", "PATCH /v1/wake-schedules/{id}", "DELETE /v1/wake-schedules/{id}",
                ])
            )
        ]
    )

    static let listOperation = APIOperation(
        "List wake schedules",
        description: "Oldest first.",
        responses: [200: .json("A page of schedules.", APISchema.page("wake_schedules", scheduleSchema))]
    )

    static let readOperation = APIOperation(
        "Read a wake schedule",
        parameters: ["id": idParameter],
        responses: [200: .json("The schedule and its last 50 runs, newest first.", scheduleSchema)]
    )

    static let updateOperation = APIOperation(
        "Change a wake schedule",
        parameters: ["id": idParameter],
        request: .json("What to change.", patchSchema, example: ["paused": true]),
        responses: [200: .json("The schedule as changed.", scheduleSchema)]
    )

    static let deleteOperation = APIOperation(
        "Delete a wake schedule",
        parameters: ["id": idParameter],
        responses: [204: .empty("Deleted.")]
    )
}
