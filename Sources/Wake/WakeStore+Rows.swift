import APNs
import Audiences
import Devices
import Foundation
import HeraldCore
import Jobs
import Storage

// Reading rows back into values, and the CloudKit target's stored JSON.
extension WakeStore {
    static func schedule(from row: SQLRow) throws -> WakeSchedule {
        let mode = WakeMode(rawValue: try row.string("mode")) ?? .apns
        var apns: WakeAPNsTarget?
        if mode == .apns, let app = try row.optionalString("app"),
            let environment = APNSEnvironment(rawValue: try row.optionalString("environment") ?? ""),
            let audience = Audience(jsonText: try row.optionalString("audience") ?? "")
        {
            apns = WakeAPNsTarget(
                app: app,
                environment: environment,
                audience: audience,
                data: try row.optionalString("data") ?? "{}"
            )
        }
        return WakeSchedule(
            id: try row.uuid("id"),
            name: try row.string("name"),
            mode: mode,
            schedule: try RecurrenceSchedule(jsonText: try row.string("schedule")),
            jitterSeconds: try row.int("jitter_seconds"),
            apns: apns,
            cloudkit: try row.optionalString("cloudkit").flatMap(Self.cloudkitTarget(text:)),
            paused: try row.bool("paused"),
            generation: try row.int("generation"),
            nextRunAt: try row.optionalDate("next_run_at"),
            lastRunAt: try row.optionalDate("last_run_at"),
            createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at")
        )
    }

    static func run(from row: SQLRow) throws -> WakeRun {
        var codes: [String] = []
        if case .array(let items)? = try? JSONValue.parse(Array(try row.string("error_codes").utf8)) {
            codes = items.compactMap(\.stringValue)
        }
        return WakeRun(
            occurrenceAt: try row.date("occurrence_at"),
            mode: WakeMode(rawValue: try row.string("mode")) ?? .apns,
            status: WakeRun.Status(rawValue: try row.string("status")) ?? .failed,
            startedAt: try row.date("started_at"),
            finishedAt: try row.optionalDate("finished_at"),
            devices: Int(try row.int("devices")),
            sent: Int(try row.int("sent")),
            skipped: Int(try row.int("skipped")),
            failed: Int(try row.int("failed")),
            recordName: try row.optionalString("record_name"),
            errorCodes: codes,
            error: try row.optionalString("error")
        )
    }

    static func cloudkitText(_ target: WakeCloudKitTarget) -> String {
        let object: JSONValue = [
            "container": .string(target.container), "environment": .string(target.environment.rawValue),
            "record_type": .string(target.recordType), "field": .string(target.field),
            "keep": .integer(Int64(target.keep)),
        ]
        return String(decoding: (try? object.jsonBytes()) ?? [], as: UTF8.self)
    }

    static func cloudkitTarget(text: String) -> WakeCloudKitTarget? {
        guard let object = try? JSONValue.parse(Array(text.utf8)),
            let container = object["container"]?.stringValue,
            let environment = object["environment"]?.stringValue.flatMap(WakeCloudKitEnvironment.init(rawValue:)),
            let recordType = object["record_type"]?.stringValue, let field = object["field"]?.stringValue,
            case .integer(let number)? = object["keep"], let keep = Int(exactly: number)
        else { return nil }
        return WakeCloudKitTarget(
            container: container,
            environment: environment,
            recordType: recordType,
            field: field,
            keep: keep
        )
    }
}
