import APNs
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
        let codes =
            (try? JSONSerialization.jsonObject(with: Data(try row.string("error_codes").utf8))) as? [String] ?? []
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
        let object: [String: Any] = [
            "container": target.container, "environment": target.environment.rawValue,
            "record_type": target.recordType, "field": target.field, "keep": target.keep,
        ]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    static func cloudkitTarget(text: String) -> WakeCloudKitTarget? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
            let container = object["container"] as? String,
            let environment = (object["environment"] as? String).flatMap(WakeCloudKitEnvironment.init(rawValue:)),
            let recordType = object["record_type"] as? String, let field = object["field"] as? String,
            let keep = (object["keep"] as? NSNumber)?.intValue
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
