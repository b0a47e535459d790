import APNs
import Audiences
import Devices
import Foundation
import HeraldCore
import Jobs

/// A wake schedule as the API shows it; `runs` only in `GET /v1/wake-schedules/{id}`.
struct WakeScheduleBody: Encodable, Sendable {
    var schedule: WakeSchedule
    var runs: [WakeRun]?

    init(_ schedule: WakeSchedule, runs: [WakeRun]?) {
        self.schedule = schedule
        self.runs = runs
    }

    enum CodingKeys: String, CodingKey {
        case id, name, mode, every, cron, timezone, jitter, paused, app, environment, audience, data, cloudkit, runs
        case nextRunAt = "next_run_at"
        case lastRunAt = "last_run_at"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    /// The zone as the API names it: `UTC` for UTC, which Foundation on Linux identifies as `GMT`
    /// (the same zone; the API documents and defaults to `UTC`).
    static func name(of zone: TimeZone) -> String {
        zone.identifier == "GMT" ? "UTC" : zone.identifier
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(RequestIdentifier.lowercaseString(schedule.id), forKey: .id)
        try container.encode(schedule.name, forKey: .name)
        try container.encode(schedule.mode.rawValue, forKey: .mode)
        switch schedule.schedule {
        case .interval(let seconds):
            try container.encode(DurationText.text(seconds), forKey: .every)
        case .cron(let expression, let zone):
            try container.encode(expression.description, forKey: .cron)
            try container.encode(Self.name(of: zone), forKey: .timezone)
        }
        try container.encode(DurationText.text(schedule.jitterSeconds), forKey: .jitter)
        try container.encode(schedule.paused, forKey: .paused)
        if let apns = schedule.apns {
            try container.encode(apns.app, forKey: .app)
            try container.encode(apns.environment.rawValue, forKey: .environment)
            try container.encode(JSONFragment(text: apns.audience.jsonText), forKey: .audience)
            try container.encode(JSONFragment(text: apns.data), forKey: .data)
        }
        if let target = schedule.cloudkit {
            try container.encode(CloudKitBody(target), forKey: .cloudkit)
        }
        try container.encode(schedule.nextRunAt, forKey: .nextRunAt)
        try container.encode(schedule.lastRunAt, forKey: .lastRunAt)
        try container.encode(schedule.createdAt, forKey: .createdAt)
        try container.encode(schedule.updatedAt, forKey: .updatedAt)
        try container.encodeIfPresent(runs?.map(WakeRunBody.init), forKey: .runs)
    }
}

struct CloudKitBody: Encodable, Sendable {
    var container: String
    var environment: String
    var recordType: String
    var field: String
    var keep: Int

    init(_ target: WakeCloudKitTarget) {
        container = target.container
        environment = target.environment.rawValue
        recordType = target.recordType
        field = target.field
        keep = target.keep
    }

    enum CodingKeys: String, CodingKey {
        case container, environment, field, keep
        case recordType = "record_type"
    }
}

/// One run in `GET /v1/wake-schedules/{id}`.
struct WakeRunBody: Encodable, Sendable {
    var run: WakeRun

    init(_ run: WakeRun) {
        self.run = run
    }

    enum CodingKeys: String, CodingKey {
        case mode, status, devices, sent, skipped, failed, error
        case at, startedAt = "started_at", finishedAt = "finished_at", recordName = "record_name"
        case errorCodes = "error_codes"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(run.occurrenceAt, forKey: .at)
        try container.encode(run.mode.rawValue, forKey: .mode)
        try container.encode(run.status.rawValue, forKey: .status)
        try container.encode(run.startedAt, forKey: .startedAt)
        try container.encode(run.finishedAt, forKey: .finishedAt)
        try container.encode(run.devices, forKey: .devices)
        try container.encode(run.sent, forKey: .sent)
        try container.encode(run.skipped, forKey: .skipped)
        try container.encode(run.failed, forKey: .failed)
        try container.encode(run.recordName, forKey: .recordName)
        try container.encode(run.errorCodes, forKey: .errorCodes)
        try container.encode(run.error, forKey: .error)
    }
}

/// Stored JSON text (an audience, `data`) encoded as the JSON value it holds (`null` when the
/// text is not JSON).
struct JSONFragment: Encodable, Sendable {
    private let value: JSONValue

    init(text: String) {
        value = (try? JSONValue.parse(Array(text.utf8))) ?? .null
    }

    func encode(to encoder: any Encoder) throws {
        try value.encode(to: encoder)
    }
}
