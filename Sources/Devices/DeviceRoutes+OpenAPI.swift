import Audiences
public import HeraldCore
import HeraldFeature

/// What `GET /v1/openapi.json` says of the device routes (``DeviceRoutes``,
/// ``ClientDeviceRoutes``): their schemas, read from the parsers (``DeviceInput``,
/// ``DeviceBatch``) and the bodies they answer (``DeviceBody``, ``BatchBody``).
extension DeviceRoutes {
    // MARK: Answers

    static let environmentSchema = APISchema.oneOf(["production", "sandbox"])
    static let platformSchema = APISchema.oneOf(DevicePlatform.allCases.map(\.rawValue))
    static let statusSchema = APISchema.oneOf(DeviceStatus.allCases.map(\.rawValue))

    /// A device as every answer shows it (``DeviceBody``): every member present, `null` when unset.
    public static let deviceSchema = APISchema.named(
        "Device",
        APISchema.object([
            "token": ["type": "string", "pattern": "^[0-9a-f]{64,200}$"],
            "app": APISchema.string,
            "environment": environmentSchema,
            "user_id": APISchema.nullable(APISchema.string),
            "tags": APISchema.array(APISchema.string),
            "locale": APISchema.nullable(APISchema.string),
            "timezone": APISchema.nullable(APISchema.string),
            "app_version": APISchema.nullable(APISchema.string),
            "platform": APISchema.nullable(platformSchema),
            "status": statusSchema,
            "invalid_reason": APISchema.nullable(APISchema.string),
            "invalid_at": APISchema.nullable(APISchema.dateTime),
            "created_at": APISchema.dateTime,
            "updated_at": APISchema.dateTime,
            "last_registered_at": APISchema.nullable(APISchema.dateTime),
        ])
    )

    /// `POST /v1/devices/batch`'s answer (``BatchBody``).
    static let batchSchema = APISchema.object([
        "results": APISchema.array(
            APISchema.object(
                [
                    "index": APISchema.integer,
                    "status": APISchema.integer,
                    "token": APISchema.string,
                    "device": deviceSchema,
                    "error": APISchema.object(
                        ["code": APISchema.string, "message": APISchema.string, "field": APISchema.string],
                        required: ["code", "message"]
                    ),
                ],
                required: ["index", "status"],
                description: "One device's answer, in the order sent: a status 201 or 200 and the device, or "
                    + "a 4xx status and the error."
            )
        ),
        "created": APISchema.integer,
        "updated": APISchema.integer,
        "failed": APISchema.integer,
    ])

    // MARK: Requests

    /// A device body's members (``DeviceInput``); `user_id` only with the API key.
    static func inputProperties(userID: Bool) -> [String: JSONValue] {
        let short = APISchema.nullable(APISchema.string(maxLength: DeviceLimits.maximumShortBytes, minLength: 0))
        var properties: [String: JSONValue] = [
            "app": APISchema.string(maxLength: DeviceLimits.maximumNameBytes),
            "environment": environmentSchema,
            "tags": APISchema.array(
                APISchema.string(maxLength: DeviceLimits.maximumTagCharacters),
                maxItems: DeviceLimits.maximumTags
            ),
            "locale": short,
            "timezone": APISchema.nullable([
                "type": "string", "maxLength": .integer(Int64(DeviceLimits.maximumShortBytes)),
                "description": "An IANA time zone name, such as Europe/Paris.",
            ]),
            "app_version": short,
            "platform": APISchema.nullable(platformSchema),
        ]
        if userID {
            properties["user_id"] = APISchema.nullable(APISchema.string(maxLength: DeviceLimits.maximumNameBytes))
        }
        return properties
    }

    /// `PUT /v1/devices/{token}`'s body: it replaces the device's metadata.
    static let inputSchema = APISchema.object(
        inputProperties(userID: true),
        required: [],
        closed: true,
        description: "The device's metadata, replaced whole: a member left out is cleared."
    )

    static let inputExample: JSONValue = [
        "app": "com.example.app", "environment": "production", "user_id": "u1", "tags": ["news"],
        "locale": "en_GB", "timezone": "Europe/London", "app_version": "2.1", "platform": "ios",
    ]

    /// `POST /v1/devices/batch`'s body: each device's token beside its metadata.
    static let batchRequestSchema = APISchema.object(
        [
            "devices": APISchema.array(
                APISchema.object(
                    inputProperties(userID: true).merging(["token": APISchema.token]) { first, _ in first },
                    required: ["token"],
                    closed: true
                ),
                maxItems: DeviceLimits.maximumBatch,
                minItems: 1
            )
        ],
        closed: true
    )

    static let batchExample: JSONValue = [
        "devices": [
            ["token": .string(String(repeating: "ab", count: 32)), "user_id": "u1", "tags": ["news"]],
            ["token": .string(String(repeating: "cd", count: 32)), "user_id": "u2", "platform": "ipados"],
        ]
    ]

    // MARK: Operations

    static let tokenParameter = APIParameter("The device token, hexadecimal.", APISchema.token)
    static let scopeParameters: [String: APIParameter] = [
        "app": APIParameter("The app (a configured bundle ID); left out: the default app."),
        "environment": APIParameter("production or sandbox; left out: the app's default.", environmentSchema),
    ]

    static let putOperation = APIOperation(
        "Register a device",
        description: "Creates the device or replaces its metadata.",
        parameters: ["token": tokenParameter],
        request: .json("The device's metadata.", inputSchema, example: inputExample),
        responses: [
            200: .json("Updated: the device.", deviceSchema),
            201: .json(
                "Created: the device.",
                deviceSchema,
                example: APISchema.example(
                    #"{"app":"com.example.app","app_version":null,"created_at":"2026-12-07T13:16:14Z","environment":"production","invalid_at":null,"invalid_reason":null,"last_registered_at":"2026-12-07T13:16:14Z","locale":null,"platform":null,"status":"active","tags":["news"],"timezone":null,"token":"abababababababababababababababababababababababababababababababab","updated_at":"2026-12-07T13:16:14Z","user_id":"ann"}"#
                )
            ),
        ]
    )

    static let readOperation = APIOperation(
        "Read a device",
        parameters: scopeParameters.merging(["token": tokenParameter]) { first, _ in first },
        responses: [200: .json("The device.", deviceSchema)]
    )

    static let deleteOperation = APIOperation(
        "Delete a device",
        parameters: scopeParameters.merging(["token": tokenParameter]) { first, _ in first },
        responses: [204: .empty("Deleted.")]
    )

    static let listOperation = APIOperation(
        "List devices",
        description: "In token order.",
        parameters: scopeParameters.merging(
            [
                "user_id": APIParameter(
                    "Only this user's devices.",
                    APISchema.string(maxLength: DeviceLimits.maximumNameBytes)
                ),
                "tag": APIParameter(
                    "Only the devices with this tag.",
                    APISchema.string(maxLength: DeviceLimits.maximumTagCharacters)
                ),
                "status": APIParameter("Only the devices with this status.", statusSchema),
                "token_prefix": APIParameter(
                    "Only the devices whose token starts with these hexadecimal digits.",
                    ["type": "string", "pattern": "^[0-9a-fA-F]{1,200}$"]
                ),
            ]
        ) { first, _ in first },
        responses: [200: .json("A page of devices.", APISchema.page("devices", deviceSchema))]
    )

    static let batchOperation = APIOperation(
        "Register devices in a batch",
        description: "1 to 1,000 devices in one transaction; an invalid entry is refused alone.",
        request: .json("The devices.", batchRequestSchema, example: batchExample),
        responses: [200: .json("One answer per device, and the counts.", batchSchema)]
    )
}

extension ClientDeviceRoutes {
    /// `PUT /v1/client/devices/{token}`'s body: a device's without `user_id` (the token's user).
    static let inputSchema = APISchema.object(
        DeviceRoutes.inputProperties(userID: false),
        required: [],
        closed: true,
        description: "The device's metadata, replaced whole: a member left out is cleared."
    )

    static let inputExample: JSONValue = [
        "tags": ["news"], "locale": "en_GB", "timezone": "Europe/London", "app_version": "2.1", "platform": "ios",
    ]

    static let putOperation = APIOperation(
        "Register the user's device",
        description: "For the client token's user: a device registered to another user moves to this one.",
        parameters: ["token": DeviceRoutes.tokenParameter],
        request: .json("The device's metadata.", inputSchema, example: inputExample),
        responses: [
            200: .json("Already the user's: the device, updated.", DeviceRoutes.deviceSchema),
            201: .json("New to the user: the device.", DeviceRoutes.deviceSchema),
        ]
    )

    static let listOperation = APIOperation(
        "List the user's devices",
        parameters: DeviceRoutes.scopeParameters,
        responses: [200: .json("A page of the user's devices.", APISchema.page("devices", DeviceRoutes.deviceSchema))]
    )

    static let deleteOperation = APIOperation(
        "Delete the user's device",
        description: "404 when the user has no such device.",
        parameters: DeviceRoutes.scopeParameters.merging(["token": DeviceRoutes.tokenParameter]) { first, _ in first },
        responses: [204: .empty("Deleted.")]
    )
}
