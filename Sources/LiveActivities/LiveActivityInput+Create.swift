import APNs
import Audiences
public import Foundation
public import HeraldCore

extension LiveActivityInput {
    static let createFields: Set<String> = [
        "id", "app", "environment", "attributes_type", "attributes", "id_attribute", "content_state", "alert",
        "audience", "channel", "request_update_token", "stale_date", "relevance_score", "start_at", "end_at",
        "start",
    ]

    /// Parses a `POST /v1/live-activities` body; `now` bounds `start_at` and `end_at`.
    public static func parseCreate(_ body: [UInt8], now: Date) throws(LiveActivityError) -> LiveActivityRequest {
        let object = try jsonObject(
            body,
            limit: LiveActivityLimits.maximumCreateBodyBytes,
            example: #"{"attributes_type": "…", "attributes": {}, "content_state": {}, "alert": {…}, "audience": {…}}"#
        )
        try known(object, createFields, what: "a Live Activity")
        var id: UUID?
        if let text = try string(object, "id", limit: 64) {
            guard let parsed = RequestIdentifier.uuid(text) else {
                throw .invalid("invalid_id", "id must be a UUID such as 6f1c…-…, or left out", field: "id")
            }
            id = parsed
        }
        let (app, environment) = try scope(object)
        let attributesType = try name(object, "attributes_type", required: true) ?? ""
        let attributes = try jsonObjectValue(object, "attributes", required: false) ?? .object([:])
        let idAttribute = try name(object, "id_attribute", required: false) ?? LiveActivityLimits.defaultIDAttribute
        let contentState = try jsonObjectValue(object, "content_state", required: true) ?? .object([:])
        let start = try start(object["start"])
        var request = LiveActivityRequest(
            id: id,
            app: app,
            environment: environment,
            attributesType: attributesType,
            attributes: attributes,
            idAttribute: idAttribute,
            contentState: contentState,
            // An activity the app starts shows no push-to-start alert: one is optional there.
            alert: try alert(object, required: start != .app) ?? LiveActivityAlert(title: "", body: ""),
            audience: try audience(object["audience"]),
            channel: try channel(object["channel"]),
            staleDate: try time(object, "stale_date"),
            relevanceScore: try score(object)
        )
        let sent = request.attributesSent(id: id ?? UUID())
        if try encodedSize(sent) + encodedSize(contentState) > LiveActivityLimits.maximumActivityDataBytes {
            throw .tooLarge(
                "activity_data_too_large",
                "attributes and content_state together are over 4096 bytes: iOS allows 4 KB for both",
                field: "attributes"
            )
        }
        if let value = object["request_update_token"], value != .null {
            guard let flag = boolean(value) else {
                throw .invalid(
                    "invalid_request_update_token",
                    "request_update_token must be true or false",
                    field: "request_update_token"
                )
            }
            request.requestUpdateToken = flag
        }
        try schedule(object, into: &request, now: now)
        if start == .app {
            request.start = .app
            if case .tokens = request.audience {
                throw .invalid(
                    "invalid_audience",
                    "an activity the app starts is for users: give the audience as users, tags or all "
                        + "(push-to-start tokens are for \"start\": \"push\")",
                    field: "audience"
                )
            }
            if request.startAt != nil {
                throw .invalid(
                    "invalid_start_at",
                    "start_at schedules a push-to-start: leave it out when the app starts the activity "
                        + "(\"start\": \"app\")",
                    field: "start_at"
                )
            }
        }
        return request
    }

    /// `start`: `"push"` (the default: Herald sends the push-to-start) or `"app"` (the app starts
    /// the activity itself). A push start is stored as `nil`, as before `start` existed.
    private static func start(_ value: JSONValue?) throws(LiveActivityError) -> LiveActivityStart? {
        guard let value, value != .null else { return nil }
        guard case .string(let text) = value, let start = LiveActivityStart(rawValue: text) else {
            throw .invalid(
                "invalid_start",
                "start must be \"push\" (Herald sends a push-to-start) or \"app\" (the app starts the activity)",
                field: "start"
            )
        }
        return start == .app ? .app : nil
    }

    private static func schedule(
        _ object: [String: JSONValue],
        into request: inout LiveActivityRequest,
        now: Date
    ) throws(LiveActivityError) {
        let nowSeconds = EpochTime.seconds(now)
        request.startAt = try time(object, "start_at")
        request.endAt = try time(object, "end_at")
        if let start = request.startAt {
            if start < nowSeconds - 60 {
                throw .invalid(
                    "invalid_start_at",
                    "start_at is in the past: leave it out to start now",
                    field: "start_at"
                )
            }
            if TimeInterval(start - nowSeconds) > LiveActivityLimits.maximumScheduleAhead {
                throw .invalid("invalid_start_at", "start_at is more than 366 days ahead", field: "start_at")
            }
        }
        if let end = request.endAt {
            let start = max(request.startAt ?? nowSeconds, nowSeconds)
            guard end > start else {
                throw .invalid("invalid_end_at", "end_at must be after the start (start_at, or now)", field: "end_at")
            }
            guard TimeInterval(end - start) <= LiveActivityLimits.maximumActivityDuration else {
                throw .invalid(
                    "invalid_end_at",
                    "end_at is more than 8 hours after the start: iOS ends an activity after 8 hours",
                    field: "end_at"
                )
            }
        }
    }

    private static func audience(_ value: JSONValue?) throws(LiveActivityError) -> LiveActivityAudience {
        let parsed: Audience
        do {
            parsed = try Audience.parse(value, field: "audience")
        } catch {
            throw LiveActivityError(error)
        }
        switch parsed {
        case .tokens(let tokens): return .tokens(tokens)
        case .users(let users): return .users(users)
        case .tags(.any(let tags)): return .anyTag(tags)
        case .tags(.all(let tags)): return .allTags(tags)
        case .all: return .all
        }
    }

    private static func channel(_ value: JSONValue?) throws(LiveActivityError) -> LiveActivityChannelRequest? {
        guard let value, value != .null else { return nil }
        let shape = #"{"create": true, "storage_policy": 0 or 1} or {"id": "<channel id>"}"#
        guard case .object(let object) = value else {
            throw .invalid("invalid_channel", "channel must be \(shape)", field: "channel")
        }
        try Reader(members: object, path: "channel", what: "a channel").rejectUnknown(
            ["create", "storage_policy", "id"],
            hint: "channel takes create and storage_policy, or id"
        )
        if let id = object["id"] {
            guard object.count == 1, case .string(let text) = id, (1...256).contains(text.utf8.count) else {
                throw .invalid("invalid_channel", "channel must be \(shape), not both", field: "channel.id")
            }
            do {
                try APNSChannelID(rawValue: text).validate()
            } catch {
                throw .invalid("invalid_channel_id", error.message, field: "channel.id")
            }
            return .existing(text)
        }
        guard let create = object["create"], boolean(create) == true else {
            throw .invalid("invalid_channel", "channel must be \(shape)", field: "channel.create")
        }
        var policy = 0
        if let value = object["storage_policy"], value != .null {
            guard let number = integer(value), number == 0 || number == 1 else {
                throw .invalid(
                    "invalid_storage_policy",
                    "storage_policy must be 0 (no message stored) or 1 (the most recent stored)",
                    field: "channel.storage_policy"
                )
            }
            policy = number
        }
        return .create(storagePolicy: policy)
    }
}
