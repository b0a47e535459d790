public import APNs
public import Audiences
import Devices
public import Foundation
public import HeraldCore
public import Jobs

/// A validated `POST /v1/wake-schedules` body.
///
/// ```json
/// {"name": "hourly", "mode": "apns", "every": "1h", "jitter": "5m",
///  "app": "com.example.app", "environment": "production", "audience": {"all": true}, "data": {"k": 1}}
/// {"name": "ck", "mode": "cloudkit", "cron": "0 * * * *", "timezone": "Europe/Berlin",
///  "cloudkit": {"container": "iCloud.com.example.app", "environment": "production"}}
/// ```
public struct WakeScheduleRequest: Sendable, Hashable {
    public var name: String
    public var mode: WakeMode
    public var schedule: RecurrenceSchedule
    public var jitterSeconds: Int64
    public var paused: Bool
    /// APNs mode: `nil` for the first configured app.
    public var app: String?
    /// APNs mode: `nil` for the app's default.
    public var environment: APNSEnvironment?
    public var audience: Audience?
    /// APNs mode: the `data` object as compact JSON text.
    public var data: String?
    public var cloudkit: WakeCloudKitTarget?

    static let commonFields: Set<String> = ["name", "mode", "every", "cron", "timezone", "jitter", "paused"]
    static let apnsFields: Set<String> = ["app", "environment", "audience", "data"]
    static let cloudkitFields: Set<String> = ["cloudkit"]

    /// Parses and validates a body; `now` checks the jitter against the schedule's gaps.
    ///
    /// - Throws: ``WakeError`` naming the field to fix.
    public static func parse(_ body: [UInt8], now: Date) throws(WakeError) -> WakeScheduleRequest {
        let object = try WakeInput.object(body, example: #"{"name": "hourly", "mode": "apns", "every": "1h", …}"#)
        guard case .string(let modeName)? = object["mode"], let mode = WakeMode(rawValue: modeName) else {
            throw .invalid("invalid_mode", #"mode is required: "apns" or "cloudkit""#, field: "mode")
        }
        let other = mode == .apns ? cloudkitFields : apnsFields
        for key in object.keys.sorted() where other.contains(key) {
            throw .unknownField(
                "\(JSONText.quote(key)) does not go with mode \(JSONText.quote(mode.rawValue))",
                field: key
            )
        }
        try WakeInput.Reader(members: object, what: "a wake schedule").rejectUnknown(
            commonFields.union(mode == .apns ? apnsFields : cloudkitFields)
        )
        let name = try WakeInput.name(object["name"], required: true) ?? ""
        let schedule = try WakeInput.schedule(
            every: object["every"],
            cron: object["cron"],
            timezone: object["timezone"]
        )
        guard let schedule else {
            throw .invalid(
                "invalid_schedule",
                #"give "every" (a duration from 10s, such as "1h") or "cron" (such as "0 * * * *")"#,
                field: "every"
            )
        }
        let jitter = try WakeInput.jitter(object["jitter"]) ?? 0
        try WakeInput.checkJitter(jitter, schedule: schedule, now: now)
        var request = WakeScheduleRequest(
            name: name,
            mode: mode,
            schedule: schedule,
            jitterSeconds: jitter,
            paused: try WakeInput.bool(object["paused"], field: "paused") ?? false
        )
        switch mode {
        case .apns:
            request.app = try WakeInput.string(object["app"], field: "app", maximum: 255)
            if let name = try WakeInput.string(object["environment"], field: "environment", maximum: 32) {
                guard let environment = APNSEnvironment(name: name) else {
                    throw .invalid(
                        "invalid_environment",
                        #"environment must be "production" or "sandbox" ("development")"#,
                        field: "environment"
                    )
                }
                request.environment = environment
            }
            guard object["audience"] != nil else {
                throw .invalid(
                    "invalid_audience",
                    #"audience is required in apns mode: {"all": true}, {"users": [...]}, {"tags": {"any": [...]}} or {"tokens": [...]}"#,
                    field: "audience"
                )
            }
            request.audience = try WakeInput.audience(object["audience"])
            request.data = try WakeInput.data(object["data"]) ?? "{}"
        case .cloudkit:
            request.cloudkit = try WakeInput.cloudkit(object["cloudkit"])
        }
        return request
    }
}

/// A validated `PATCH /v1/wake-schedules/{id}` body: each field present is changed.
public struct WakeSchedulePatch: Sendable, Hashable {
    public var name: String?
    public var paused: Bool?
    public var every: Int64?
    public var cron: String?
    public var timezone: String?
    public var jitterSeconds: Int64?
    public var data: String?
    public var audience: Audience?

    static let fields: Set<String> = ["name", "paused", "every", "cron", "timezone", "jitter", "data", "audience"]

    /// Whether the change moves the schedule's timing (so its next run is computed again).
    public var changesTiming: Bool { paused != nil || every != nil || cron != nil || timezone != nil }

    public static func parse(_ body: [UInt8]) throws(WakeError) -> WakeSchedulePatch {
        let object = try WakeInput.object(body, example: #"{"paused": true}"#)
        try WakeInput.Reader(members: object, what: "a wake schedule change").rejectUnknown(fields)
        guard !object.isEmpty else {
            throw .invalid(
                "empty_patch",
                "the body changes nothing: give at least one of "
                    + fields.sorted().joined(separator: ", "),
                field: nil
            )
        }
        if object["every"] != nil, object["cron"] != nil {
            throw .invalid("invalid_schedule", #"give "every" or "cron", not both"#, field: "cron")
        }
        if object["every"] != nil, object["timezone"] != nil {
            throw .invalid("invalid_timezone", "timezone goes with cron, not with every", field: "timezone")
        }
        var patch = WakeSchedulePatch()
        patch.name = try WakeInput.name(object["name"], required: false)
        patch.paused = try WakeInput.bool(object["paused"], field: "paused")
        if let value = object["every"] { patch.every = try WakeInput.every(value) }
        if let value = object["cron"] {
            patch.cron = try WakeInput.string(value, field: "cron", maximum: 200)
            _ = try WakeInput.schedule(every: JSONValue?.none, cron: value, timezone: object["timezone"])
        }
        patch.timezone = try WakeInput.string(object["timezone"], field: "timezone", maximum: 64)
        patch.jitterSeconds = try WakeInput.jitter(object["jitter"])
        patch.data = try WakeInput.data(object["data"])
        if object["audience"] != nil { patch.audience = try WakeInput.audience(object["audience"]) }
        return patch
    }
}
