import APNsSimulator
import DatabaseTestSupport
import Foundation
import HTTPRouting
import HeraldCore
import Jobs
import Storage
import Testing

@testable import Wake

/// CloudKit mode: with a fake publisher, records on time, the cleanup and CloudKit's errors; with the
/// real client, against the simulator's CloudKit.
@Suite("Wake schedules in CloudKit mode")
struct WakeCloudKitTests {
    static var body: [String: Any] {
        [
            "name": "ck", "mode": "cloudkit", "every": "1m",
            "cloudkit": [
                "container": "iCloud.com.example.wake", "environment": "development", "record_type": "WakePing",
                "field": "ts", "keep": 2,
            ],
        ]
    }

    @Test("each occurrence creates one record at its time, then cleans up keeping keep", arguments: Backend.allCases)
    func recordsOnTime(_ backend: Backend) async throws {
        let publisher = FakePublisher()
        try await WakeHarness.with(backend, publisher: publisher) { harness in
            let schedule = try await harness.instance.create(Self.body)
            let start = EpochTime.seconds(harness.clock.now())
            for _ in 1...3 {
                harness.clock.advance(60)
                #expect(try await harness.instance.worker.runDueJobs() == 1)
            }
            #expect(publisher.cleanups == [2, 2, 2])
            #expect(publisher.records.map(\.unixSeconds) == [start + 120, start + 180], "the newest 2 are kept")
            let record = try #require(publisher.records.last)
            #expect(record.container == "iCloud.com.example.wake")
            #expect(record.environment == .development)
            #expect(record.recordType == "WakePing")
            #expect(record.field == "ts")
            let runs = try await harness.instance.store.runs(scheduleID: schedule.id)
            #expect(runs.map(\.status) == [.done, .done, .done])
            #expect(runs.map(\.recordName) == ["record-3", "record-2", "record-1"])
            #expect(
                runs.map(\.occurrenceAt)
                    == [180, 120, 60].map { Date(timeIntervalSince1970: TimeInterval(start + $0)) }
            )
        }
    }

    @Test(
        "against the simulator's CloudKit, with the real client: a record per occurrence, only keep left",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func againstTheSimulator(_ backend: Backend) async throws {
        try await WakeHarness.with(backend, cloudKit: true) { harness in
            let schedule = try await harness.instance.create(Self.body)
            let start = EpochTime.seconds(harness.clock.now())
            for _ in 1...3 {
                harness.clock.advance(60)
                #expect(try await harness.instance.worker.runDueJobs() == 1)
            }
            let response = try await harness.simulator.control.respond(
                to: HTTPRequest(method: "GET", path: "/cloudkit/records?container=iCloud.com.example.wake")
            )
            #expect(response.status == 200)
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
            )
            let records = try #require(object["records"] as? [[String: Any]])
            #expect(records.map { $0["environment"] as? String } == ["development", "development"])
            let held = records.compactMap { $0["record"] as? [String: Any] }
            #expect(held.map { $0["recordType"] as? String } == ["WakePing", "WakePing"])
            let times = held.compactMap {
                (($0["fields"] as? [String: Any])?["ts"] as? [String: Any])?["value"] as? Int64
            }
            #expect(times == [start + 120, start + 180], "the newest 2 are kept")
            let runs = try await harness.instance.store.runs(scheduleID: schedule.id)
            #expect(runs.map(\.status) == [.done, .done, .done])
            #expect(
                Array(runs.prefix(2).compactMap(\.recordName).reversed())
                    == held.compactMap { $0["recordName"] as? String }
            )
        }
    }

    @Test(
        "a failed cleanup does not fail the run; its code is in the history",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func cleanupFailure(_ backend: Backend) async throws {
        let publisher = FakePublisher()
        publisher.failCleanups([WakeCloudKitError(code: "SERVICE_UNAVAILABLE", isRetryable: true)])
        try await WakeHarness.with(backend, publisher: publisher) { harness in
            let schedule = try await harness.instance.create(Self.body)
            harness.clock.advance(60)
            #expect(try await harness.instance.worker.runDueJobs() == 1)
            let run = try #require(try await harness.instance.store.runs(scheduleID: schedule.id).first)
            #expect(run.status == .done)
            #expect(run.recordName == "record-1")
            #expect(run.errorCodes == ["SERVICE_UNAVAILABLE"])
            #expect(publisher.records.count == 1)
        }
    }

    @Test(
        "THROTTLED is retried after CloudKit's retryAfter; the code stays in the history",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func retryableRetried(_ backend: Backend) async throws {
        let publisher = FakePublisher()
        publisher.failCreates([WakeCloudKitError(code: "THROTTLED", isRetryable: true, retryAfter: .seconds(20))])
        try await WakeHarness.with(backend, publisher: publisher) { harness in
            let schedule = try await harness.instance.create(Self.body)
            harness.clock.advance(60)
            #expect(try await harness.instance.worker.runDueJobs() == 1)
            var run = try #require(try await harness.instance.store.runs(scheduleID: schedule.id).first)
            #expect(run.status == .retrying)
            #expect(run.errorCodes == ["THROTTLED"])
            #expect(publisher.records.isEmpty)
            harness.clock.advance(19)
            #expect(try await harness.instance.worker.runDueJobs() == 0, "not before retryAfter")
            harness.clock.advance(1)
            #expect(try await harness.instance.worker.runDueJobs() == 1)
            run = try #require(try await harness.instance.store.runs(scheduleID: schedule.id).first)
            #expect(run.status == .done)
            #expect(run.recordName == "record-1")
            #expect(run.errorCodes == ["THROTTLED"])
            #expect(try await harness.instance.store.runs(scheduleID: schedule.id).count == 1, "one run per occurrence")
        }
    }

    @Test(
        "AUTHENTICATION_FAILED fails the run without retrying; the next occurrence still runs",
        arguments: [Backend.sqliteMemory]
    )
    func permanentFailure(_ backend: Backend) async throws {
        let publisher = FakePublisher()
        publisher.failCreates([WakeCloudKitError(code: "AUTHENTICATION_FAILED", isRetryable: false)])
        try await WakeHarness.with(backend, publisher: publisher) { harness in
            let schedule = try await harness.instance.create(Self.body)
            harness.clock.advance(60)
            #expect(try await harness.instance.worker.runDueJobs() == 1)
            let failed = try #require(try await harness.instance.store.runs(scheduleID: schedule.id).first)
            #expect(failed.status == .failed)
            #expect(failed.errorCodes == ["AUTHENTICATION_FAILED"])
            harness.clock.advance(30)
            #expect(try await harness.instance.worker.runDueJobs() == 0)
            harness.clock.advance(30)
            #expect(try await harness.instance.worker.runDueJobs() == 1)
            #expect(try await harness.instance.store.runs(scheduleID: schedule.id).first?.status == .done)
            #expect(
                harness.instance.metrics.value(
                    "herald_wake_runs_total",
                    labels: [("mode", "cloudkit"), ("result", "failed")]
                ) == 1
            )
        }
    }

    @Test("without a publisher, a CloudKit-mode schedule is refused naming the settings")
    func notConfigured() async throws {
        try await WakeHarness.with(.sqliteMemory) { harness in
            do {
                _ = try await harness.instance.create(Self.body)
                Issue.record("a CloudKit schedule was accepted without CloudKit")
            } catch let error as WakeError {
                #expect(error.kind == .notConfigured)
                #expect(error.message.contains("CLOUDKIT_KEY_ID"))
                #expect(error.message.contains("CLOUDKIT_PRIVATE_KEY"))
            }
        }
    }
}
