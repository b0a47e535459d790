import APNs
import APNsSimulator
import AsyncTestSupport
import DatabaseTestSupport
import Devices
import Foundation
import HeraldCore
import Jobs
import Storage
import Testing

@testable import Wake

/// APNs mode end to end: the real client over HTTP/2 + TLS to the simulator, devices read from
/// the registry, the per-device floor shared by every schedule.
@Suite("Wake schedules in APNs mode")
struct WakeAPNsTests {
    @Test(
        "two schedules to one audience: a background push at priority 5, each device at most once per minimum interval",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func floorAcrossSchedules(_ backend: Backend) async throws {
        try await WakeHarness.with(backend, minimumInterval: 1_200, pageSize: 2) { harness in
            let tokens = WakeHarness.tokens(6)
            try await harness.register(Array(tokens[0..<4]), tags: ["beta"])
            try await harness.register(Array(tokens[4..<6]))
            harness.simulator.addFault(
                APNSSimulatorFault(.respond(status: 410, reason: .unregistered), token: tokens[5])
            )
            let instance = harness.instance
            let hourly = try await instance.create([
                "name": "every 10m", "mode": "apns", "every": "10m", "audience": ["all": true],
                "data": ["kind": "refresh"],
            ])
            let beta = try await instance.create([
                "name": "beta", "mode": "apns", "every": "15m", "audience": ["tags": ["any": ["beta"]]],
            ])
            #expect(hourly.nextRunAt == harness.clock.now().addingTimeInterval(600))

            harness.clock.advance(600)
            #expect(try await instance.worker.runDueJobs() == 1)
            #expect(harness.delivered() == Dictionary(uniqueKeysWithValues: tokens[0..<5].map { ($0, 1) }))
            let push = try #require(harness.simulator.deliveries().first { $0.isDelivered })
            #expect(push.pushType == "background")
            #expect(push.priority == 5)
            #expect(push.topic == WakeHarness.topic)
            let payload = try #require(try JSONSerialization.jsonObject(with: Data(push.payload)) as? [String: Any])
            #expect((payload["aps"] as? [String: Any])?["content-available"] as? Int == 1)
            #expect(payload["kind"] as? String == "refresh")
            let dead = try await instance.devices.device(
                app: WakeHarness.topic,
                environment: .production,
                token: tokens[5]
            )
            #expect(dead?.status == .invalid, "410 invalidates the device as the registry's rule says")
            var first = try #require(try await instance.store.runs(scheduleID: hourly.id).first)
            #expect((first.devices, first.sent, first.skipped, first.failed) == (6, 5, 0, 1))

            // 15 min: the beta schedule finds its four devices pinged 5 minutes ago.
            harness.clock.advance(300)
            #expect(try await instance.worker.runDueJobs() == 1)
            let skipped = try #require(try await instance.store.runs(scheduleID: beta.id).first)
            #expect((skipped.devices, skipped.sent, skipped.skipped) == (4, 0, 4))

            // 20 min: the 10-minute schedule again, 10 minutes after its pings: all skipped; the dead
            // device is no longer in the audience.
            harness.clock.advance(300)
            #expect(try await instance.worker.runDueJobs() == 1)
            first = try #require(try await instance.store.runs(scheduleID: hourly.id).first)
            #expect((first.devices, first.sent, first.skipped) == (5, 0, 5))

            // 30 min: both are due at once; each device gets one ping from one of them.
            harness.clock.advance(600)
            #expect(try await instance.worker.runDueJobs() == 2)
            #expect(harness.delivered() == Dictionary(uniqueKeysWithValues: tokens[0..<5].map { ($0, 2) }))
            let a = try #require(try await instance.store.runs(scheduleID: hourly.id).first)
            let b = try #require(try await instance.store.runs(scheduleID: beta.id).first)
            #expect(a.sent + b.sent == 5)
            #expect(a.skipped + b.skipped == 4)
            #expect(try await instance.store.runs(scheduleID: hourly.id).count == 3)

            let metrics = instance.metrics
            #expect(metrics.value("herald_wake_pings_total", labels: [("mode", "apns"), ("result", "sent")]) == 10)
            #expect(
                metrics.value("herald_wake_pings_total", labels: [("mode", "apns"), ("result", "skipped")]) == 13
            )
            #expect(metrics.value("herald_wake_pings_total", labels: [("mode", "apns"), ("result", "dead")]) == 1)
            #expect(metrics.value("herald_wake_runs_total", labels: [("mode", "apns"), ("result", "done")]) == 5)
        }
    }

    @Test(
        "jitter spreads a run's sends evenly over its window, on the injected clock",
        arguments: [Backend.sqliteMemory]
    )
    func jitterSpreadsSends(_ backend: Backend) async throws {
        try await WakeHarness.with(backend, minimumInterval: 0) { harness in
            let tokens = WakeHarness.tokens(4)
            try await harness.register(tokens)
            let instance = harness.instance
            _ = try await instance.create([
                "name": "spread", "mode": "apns", "every": "1h", "jitter": "4m", "audience": ["all": true],
            ])
            harness.clock.advance(3_600)
            let start = harness.clock.now()
            let worker = instance.worker
            async let ran = worker.runDueJobs()
            // Device i of 4 leaves at start + 4 min × i / 4: the first at once, then one a minute.
            for minute in 1...3 {
                try await harness.clock.waitForSleep(within: 20) {
                    $0 == start.addingTimeInterval(TimeInterval(60 * minute))
                }
                try await eventually("\(minute) device(s) pinged") { harness.delivered().count == minute }
                harness.clock.advance(60)
            }
            #expect(try await ran == 1)
            #expect(harness.delivered().count == 4)
        }
    }

    @Test(
        "a tokens audience, in pages: a token APNs called dead is left out of the next runs",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func tokensAudienceDropsDeadTokens(_ backend: Backend) async throws {
        try await WakeHarness.with(backend, minimumInterval: 0, pageSize: 2) { harness in
            let tokens = WakeHarness.tokens(5)
            harness.simulator.addFault(
                APNSSimulatorFault(.respond(status: 410, reason: .unregistered), token: tokens[1])
            )
            let instance = harness.instance
            let schedule = try await instance.create([
                "name": "listed", "mode": "apns", "every": "1m", "audience": ["tokens": tokens],
            ])
            harness.clock.advance(60)
            #expect(try await instance.worker.runDueJobs() == 1)
            var run = try #require(try await instance.store.runs(scheduleID: schedule.id).first)
            #expect((run.devices, run.sent, run.failed) == (5, 4, 1))
            harness.clock.advance(60)
            #expect(try await instance.worker.runDueJobs() == 1)
            run = try #require(try await instance.store.runs(scheduleID: schedule.id).first)
            #expect((run.devices, run.sent, run.failed) == (4, 4, 0))
            var expected = Dictionary(uniqueKeysWithValues: tokens.map { ($0, 2) })
            expected[tokens[1]] = nil
            #expect(harness.delivered() == expected)
        }
    }

    @Test("the payload is {\"aps\":{\"content-available\":1}} with data's keys beside aps")
    func payload() {
        #expect(WakeRunner.payload(data: "{}") == #"{"aps":{"content-available":1}}"#)
        #expect(WakeRunner.payload(data: #"{"a":1,"b":"x"}"#) == #"{"aps":{"content-available":1},"a":1,"b":"x"}"#)
    }
}
