import APNs
import Foundation
import HeraldCore
import Jobs
import Testing

@testable import Wake

/// Every input rule of the create and patch bodies, each refused with its code, field and kind.
@Suite("Wake schedule input")
struct WakeInputTests {
    static let now = Date(timeIntervalSince1970: 1_790_000_000)
    static var apns: [String: Any] {
        ["name": "n", "mode": "apns", "every": "1h", "audience": ["all": true]]
    }
    static var cloudkit: [String: Any] {
        [
            "name": "n", "mode": "cloudkit", "every": "1h",
            "cloudkit": ["container": "iCloud.com.example.app", "environment": "production"],
        ]
    }

    static func with(_ base: [String: Any], _ changes: [String: Any?]) -> [String: Any] {
        var body = base
        for (key, value) in changes { body[key] = value }
        return body
    }

    static func refusal(_ body: [String: Any]) throws -> WakeError? {
        let bytes = Array(try JSONSerialization.data(withJSONObject: body))
        do {
            _ = try WakeScheduleRequest.parse(bytes, now: now)
            return nil
        } catch {
            return error
        }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var label: String
        var body: @Sendable () -> [String: Any]
        var code: String
        var field: String?
        var tooLarge = false
        var testDescription: String { label }
    }

    static let cases: [Case] = [
        Case(label: "no mode", body: { with(apns, ["mode": nil]) }, code: "invalid_mode", field: "mode"),
        Case(label: "unknown mode", body: { with(apns, ["mode": "sms"]) }, code: "invalid_mode", field: "mode"),
        Case(label: "unknown field", body: { with(apns, ["colour": 1]) }, code: "unknown_field", field: "colour"),
        Case(
            label: "cloudkit field in apns mode",
            body: { with(apns, ["cloudkit": [:]]) },
            code: "unknown_field",
            field: "cloudkit"
        ),
        Case(label: "no name", body: { with(apns, ["name": nil]) }, code: "invalid_name", field: "name"),
        Case(
            label: "long name",
            body: { with(apns, ["name": String(repeating: "n", count: 101)]) },
            code: "invalid_name",
            field: "name"
        ),
        Case(label: "no schedule", body: { with(apns, ["every": nil]) }, code: "invalid_schedule", field: "every"),
        Case(
            label: "every and cron",
            body: { with(apns, ["cron": "0 * * * *"]) },
            code: "invalid_schedule",
            field: "cron"
        ),
        Case(label: "every under 10s", body: { with(apns, ["every": "9s"]) }, code: "invalid_every", field: "every"),
        Case(
            label: "every not a duration",
            body: { with(apns, ["every": "hourly"]) },
            code: "invalid_every",
            field: "every"
        ),
        Case(
            label: "every over a year",
            body: { with(apns, ["every": "400d"]) },
            code: "invalid_every",
            field: "every"
        ),
        Case(
            label: "bad cron",
            body: { with(apns, ["every": nil, "cron": "61 * * * *"]) },
            code: "invalid_cron",
            field: "cron"
        ),
        Case(
            label: "unknown time zone",
            body: { with(apns, ["every": nil, "cron": "0 * * * *", "timezone": "Mars/Base"]) },
            code: "invalid_timezone",
            field: "timezone"
        ),
        Case(
            label: "timezone with every",
            body: { with(apns, ["timezone": "UTC"]) },
            code: "invalid_timezone",
            field: "timezone"
        ),
        Case(
            label: "jitter over the interval",
            body: { with(apns, ["jitter": "2h"]) },
            code: "invalid_jitter",
            field: "jitter"
        ),
        Case(
            label: "jitter over cron's gap",
            body: { with(apns, ["every": nil, "cron": "*/5 * * * *", "jitter": "6m"]) },
            code: "invalid_jitter",
            field: "jitter"
        ),
        Case(
            label: "jitter not a duration",
            body: { with(apns, ["jitter": 5]) },
            code: "invalid_jitter",
            field: "jitter"
        ),
        Case(
            label: "paused not a bool",
            body: { with(apns, ["paused": "yes"]) },
            code: "invalid_paused",
            field: "paused"
        ),
        Case(
            label: "bad environment",
            body: { with(apns, ["environment": "staging"]) },
            code: "invalid_environment",
            field: "environment"
        ),
        Case(
            label: "no audience",
            body: { with(apns, ["audience": nil]) },
            code: "invalid_audience",
            field: "audience"
        ),
        Case(
            label: "too many tokens",
            body: { with(apns, ["audience": ["tokens": (0...10_000).map { String(format: "%064x", $0) }]]) },
            code: "too_many_tokens",
            field: "audience.tokens",
            tooLarge: true
        ),
        Case(label: "data not an object", body: { with(apns, ["data": [1]]) }, code: "invalid_data", field: "data"),
        Case(
            label: "data with aps",
            body: { with(apns, ["data": ["aps": [:]]]) },
            code: "invalid_data",
            field: "data.aps"
        ),
        Case(
            label: "data too large",
            body: { with(apns, ["data": ["k": String(repeating: "x", count: 2_100)]]) },
            code: "data_too_large",
            field: "data",
            tooLarge: true
        ),
        Case(
            label: "no cloudkit",
            body: { with(cloudkit, ["cloudkit": nil]) },
            code: "invalid_cloudkit",
            field: "cloudkit"
        ),
        Case(
            label: "audience in cloudkit mode",
            body: { with(cloudkit, ["audience": ["all": true]]) },
            code: "unknown_field",
            field: "audience"
        ),
        Case(
            label: "bad container",
            body: { with(cloudkit, ["cloudkit": ["container": "a/b", "environment": "production"]]) },
            code: "invalid_container",
            field: "cloudkit.container"
        ),
        Case(
            label: "bad cloudkit environment",
            body: { with(cloudkit, ["cloudkit": ["container": "iCloud.x", "environment": "sandbox"]]) },
            code: "invalid_environment",
            field: "cloudkit.environment"
        ),
        Case(
            label: "bad record type",
            body: {
                with(
                    cloudkit,
                    ["cloudkit": ["container": "iCloud.x", "environment": "production", "record_type": "1Wake"]]
                )
            },
            code: "invalid_record_type",
            field: "cloudkit.record_type"
        ),
        Case(
            label: "bad field",
            body: {
                with(cloudkit, ["cloudkit": ["container": "iCloud.x", "environment": "production", "field": "t s"]])
            },
            code: "invalid_field",
            field: "cloudkit.field"
        ),
        Case(
            label: "keep 0",
            body: { with(cloudkit, ["cloudkit": ["container": "iCloud.x", "environment": "production", "keep": 0]]) },
            code: "invalid_keep",
            field: "cloudkit.keep"
        ),
        Case(
            label: "keep 201",
            body: {
                with(cloudkit, ["cloudkit": ["container": "iCloud.x", "environment": "production", "keep": 201]])
            },
            code: "invalid_keep",
            field: "cloudkit.keep"
        ),
        Case(
            label: "unknown cloudkit field",
            body: {
                with(cloudkit, ["cloudkit": ["container": "iCloud.x", "environment": "production", "zone": "z"]])
            },
            code: "unknown_field",
            field: "cloudkit.zone"
        ),
    ]

    @Test("each rule is refused with its code and field", arguments: cases)
    func refused(_ rule: Case) throws {
        let error = try #require(try Self.refusal(rule.body()))
        #expect(error.code == rule.code, "\(error)")
        #expect(error.field == rule.field, "\(error)")
        #expect((error.kind == .tooLarge) == rule.tooLarge, "\(error)")
        #expect(!error.message.isEmpty)
    }

    @Test("valid bodies of both modes parse, with their defaults")
    func accepted() throws {
        let body = Self.with(Self.apns, ["jitter": "5m", "data": ["kind": "sync"], "environment": "development"])
        let request = try WakeScheduleRequest.parse(
            Array(try JSONSerialization.data(withJSONObject: body)),
            now: Self.now
        )
        #expect(request.schedule == .interval(seconds: 3_600))
        #expect(request.jitterSeconds == 300)
        #expect(request.environment == .sandbox)
        #expect(request.data == #"{"kind":"sync"}"#)
        let ck = try WakeScheduleRequest.parse(
            Array(try JSONSerialization.data(withJSONObject: Self.cloudkit)),
            now: Self.now
        )
        #expect(ck.cloudkit == WakeCloudKitTarget(container: "iCloud.com.example.app", environment: .production))
    }

    @Test("the body's limits: size, depth, duplicate keys")
    func bodyLimits() throws {
        let big = [UInt8](repeating: 0x20, count: WakeLimits.maximumBodyBytes + 1)
        #expect(throws: WakeError.self) { try WakeScheduleRequest.parse(big, now: Self.now) }
        let deep = Array((String(repeating: "[", count: 20) + String(repeating: "]", count: 20)).utf8)
        #expect(throws: WakeError.self) { try WakeScheduleRequest.parse(deep, now: Self.now) }
        let duplicate = Array(#"{"name": "a", "name": "b"}"#.utf8)
        do {
            _ = try WakeScheduleRequest.parse(duplicate, now: Self.now)
            Issue.record("a duplicate key was accepted")
        } catch {
            #expect(error.code == "duplicate_key")
        }
    }

    @Test("patch: unknown fields, an empty patch, every with cron are refused")
    func patchRules() throws {
        for (body, code) in [
            (#"{"mode": "apns"}"#, "unknown_field"), ("{}", "empty_patch"),
            (#"{"every": "1h", "cron": "0 * * * *"}"#, "invalid_schedule"), (#"{"every": "5s"}"#, "invalid_every"),
            (#"{"paused": 1}"#, "invalid_paused"), (#"{"timezone": "UTC", "every": "1h"}"#, "invalid_timezone"),
        ] {
            do {
                _ = try WakeSchedulePatch.parse(Array(body.utf8))
                Issue.record("\(body) was accepted")
            } catch {
                #expect(error.code == code, "\(body): \(error)")
            }
        }
        let patch = try WakeSchedulePatch.parse(Array(#"{"paused": true, "jitter": "1m"}"#.utf8))
        #expect(patch.paused == true)
        #expect(patch.jitterSeconds == 60)
    }

    @Test("durations: units and their sums, written back in the largest units")
    func durations() {
        #expect(DurationText.seconds("10s") == 10)
        #expect(DurationText.seconds("1h30m") == 5_400)
        #expect(DurationText.seconds("2d") == 172_800)
        #expect(DurationText.seconds("1x") == nil)
        #expect(DurationText.seconds("10") == nil)
        #expect(DurationText.seconds("") == nil)
        #expect(DurationText.text(5_400) == "1h30m")
        #expect(DurationText.text(0) == "0s")
    }
}
