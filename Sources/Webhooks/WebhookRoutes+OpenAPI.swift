import HeraldCore
import HeraldFeature

/// What `GET /v1/openapi.json` says of the webhooks routes.
extension WebhookRoutes {
    static let idParameter = APIParameter("The webhook's id, as its POST answered.", APISchema.uuid)

    static let events = APISchema.array(APISchema.oneOf(WebhookEventType.allCases.map(\.rawValue)), minItems: 1)

    static let webhook = APISchema.named(
        "Webhook",
        APISchema.object(
            [
                "id": APISchema.uuid,
                "url": APISchema.string,
                "events": events,
                "created_at": APISchema.dateTime,
                "secret": APISchema.string(description: "Only in the answer to the POST that created it."),
                "delivery": APISchema.object(
                    [
                        "pending": APISchema.integer,
                        "dead": APISchema.integer,
                        "delivered": APISchema.integer,
                        "last_delivery_at": APISchema.nullable(APISchema.dateTime),
                        "last_error": APISchema.nullable(APISchema.string),
                        "last_error_at": APISchema.nullable(APISchema.dateTime),
                    ],
                    description: "Only in GET /v1/webhooks/{id}."
                ),
            ],
            required: ["id", "url", "events", "created_at"]
        )
    )

    static let create = APIOperation(
        "Register a webhook",
        description: "Herald POSTs the chosen events to the URL, signed with the secret (generated when not "
            + "given, shown only in this answer).",
        request: .json(
            "Where to send which events.",
            APISchema.object(
                [
                    "url": APISchema.string(maxLength: WebhookLimits.maximumURLBytes),
                    "events": events,
                    "secret": APISchema.string(
                        maxLength: WebhookLimits.maximumSecretBytes,
                        minLength: WebhookLimits.minimumSecretBytes
                    ),
                ],
                required: ["url", "events"],
                closed: true
            ),
            example: ["url": "https://example.com/herald-events", "events": ["notification.finished"]]
        ),
        responses: [
            201: .json(
                "The webhook, with its secret.",
                webhook,
                example: APISchema.example(
                    #"{"created_at":"2026-12-07T13:16:14Z","events":["notification.finished"],"id":"01a250a5-d1c7-737d-8fc9-8f04cb9215f7","secret":"whsec_lCxpI7x251-a1S8Z-de4cM4fQlzwQNX0yYPowqCg4Jk","url":"https://example.com/herald-events"}"#
                ),
                links: APILink.byID([
                    "GET /v1/webhooks/{id}", "POST /v1/webhooks/{id}/test", "DELETE /v1/webhooks/{id}",
                ])
            )
        ]
    )

    static let list = APIOperation(
        "List webhooks",
        description: "Oldest first, without secrets.",
        responses: [200: .json("A page of webhooks.", APISchema.page("webhooks", webhook))]
    )

    static let readOperation = APIOperation(
        "Read a webhook and its delivery state",
        parameters: ["id": idParameter],
        responses: [200: .json("The webhook with pending and dead events, deliveries and the last error.", webhook)]
    )

    static let deleteOperation = APIOperation(
        "Delete a webhook",
        description: "Its undelivered events go with it.",
        parameters: ["id": idParameter],
        responses: [204: .empty("Deleted.")]
    )

    static let testOperation = APIOperation(
        "Send a test event",
        description: "Queues a webhook.test event for this webhook alone, whatever it subscribes to: delivered, "
            + "signed and retried as every event is. GET /v1/webhooks/{id} then shows it pending, delivered or "
            + "the receiver's error.",
        parameters: ["id": idParameter],
        request: .json("No fields: send {} or nothing.", APISchema.object([:], closed: true), example: [:]),
        responses: [
            202: .json(
                "The event queued, as it will be delivered.",
                APISchema.object(
                    [
                        "id": APISchema.uuid,
                        "type": APISchema.oneOf([WebhookEventType.webhookTest.rawValue]),
                        "created_at": APISchema.dateTime,
                        "data": APISchema.object(
                            ["webhook_id": APISchema.uuid, "message": APISchema.string],
                            required: ["webhook_id", "message"]
                        ),
                    ],
                    required: ["id", "type", "created_at", "data"]
                )
            )
        ]
    )
}
