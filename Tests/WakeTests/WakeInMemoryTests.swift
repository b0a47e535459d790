import APNs
import APNsTestSupport
import DatabaseTestSupport
import Devices
import Foundation
import HeraldCore
import Jobs
import Testing

@testable import Wake

/// Wake's APNs mode against the in-memory APNs: no socket, no real clock. A run's outcomes per
/// device, the registry's dead-token rule, the client's retries on the manual clock, and the
/// pushes as the client wrote them.
@Suite("Wake schedules against the in-memory APNs")
struct WakeInMemoryTests {
    @Test(
        "one run with mixed outcomes: sent, dead (410 with APNs' timestamp, BadDeviceToken), failed; the dead drop out",
        arguments: Backend.allCases
    )
    func mixedOutcomes(_ backend: Backend) async throws {
        try await WakeHarness.inMemory(backend, minimumInterval: 0, retryPolicy: .never) { harness in
            let tokens = WakeHarness.tokens(6)
            try await harness.register(tokens)
            // After the registration: the registry's rule invalidates only then.
            let unregisteredAt = harness.clock.now().addingTimeInterval(300)
            harness.apns.always(tokens[0], .unregistered(at: unregisteredAt))
            harness.apns.always(tokens[1], .badDeviceToken)
            harness.apns.script(tokens[2], .internalServerError)
            harness.apns.script(tokens[3], .transportError(InMemoryAPNs.ConnectionLost()))
            let instance = harness.instance
            let schedule = try await instance.create([
                "name": "mixed", "mode": "apns", "every": "10m", "audience": ["all": true],
            ])

            harness.clock.advance(600)
            #expect(try await instance.worker.runDueJobs() == 1)
            var run = try #require(try await instance.store.runs(scheduleID: schedule.id).first)
            #expect((run.devices, run.sent, run.skipped, run.failed) == (6, 2, 0, 4))
            #expect(harness.apns.requests.count == 6)
            #expect(harness.apns.requests(to: tokens[0]).map(\.status) == [410])
            #expect(harness.apns.requests(to: tokens[3]).map(\.status) == [nil])

            let unregistered = try #require(
                try await instance.devices.device(app: WakeHarness.topic, environment: .production, token: tokens[0])
            )
            #expect(unregistered.status == .invalid)
            #expect(unregistered.invalidReason == "Unregistered")
            #expect(unregistered.invalidAt == unregisteredAt, "APNs' timestamp")
            let bad = try #require(
                try await instance.devices.device(app: WakeHarness.topic, environment: .production, token: tokens[1])
            )
            #expect(bad.status == .invalid)
            #expect(bad.invalidReason == "BadDeviceToken")
            #expect(bad.invalidAt == harness.clock.now(), "no timestamp: the clock's time")
            for token in tokens[2...] {
                let device = try await instance.devices.device(
                    app: WakeHarness.topic,
                    environment: .production,
                    token: token
                )
                #expect(device?.status == .active, "a failed push does not invalidate")
            }
            let metrics = instance.metrics
            #expect(metrics.value("herald_wake_pings_total", labels: [("mode", "apns"), ("result", "sent")]) == 2)
            #expect(metrics.value("herald_wake_pings_total", labels: [("mode", "apns"), ("result", "dead")]) == 2)

            // The next run leaves the dead devices out and pings the rest, the failed ones included.
            harness.clock.advance(600)
            #expect(try await instance.worker.runDueJobs() == 1)
            run = try #require(try await instance.store.runs(scheduleID: schedule.id).first)
            #expect((run.devices, run.sent, run.skipped, run.failed) == (4, 4, 0, 0))
            #expect(harness.apns.requests(to: tokens[0]).count == 1)
            #expect(harness.apns.requests(to: tokens[1]).count == 1)
            #expect(harness.apns.requests(to: tokens[2]).map(\.status) == [500, 200])
        }
    }

    @Test(
        "the client retries 429 and 503 after APNs' retry-after on the manual clock, within the run",
        arguments: Backend.allCases
    )
    func clientRetries(_ backend: Backend) async throws {
        try await WakeHarness.inMemory(backend, minimumInterval: 0) { harness in
            let tokens = WakeHarness.tokens(3)
            try await harness.register(tokens)
            harness.apns.script(
                tokens[1],
                .tooManyRequests(retryAfter: 2),
                .serviceUnavailable(retryAfter: 5),
                .success
            )
            let instance = harness.instance
            let schedule = try await instance.create([
                "name": "retried", "mode": "apns", "every": "1h", "audience": ["all": true],
            ])
            harness.clock.advance(3_600)
            let start = harness.clock.now()
            let worker = instance.worker
            async let ran = worker.runDueJobs()
            #expect(try await harness.clock.advanceToNextDeadline() == start.addingTimeInterval(2))
            #expect(try await harness.clock.advanceToNextDeadline() == start.addingTimeInterval(7))
            #expect(try await ran == 1)

            let attempts = harness.apns.requests(to: tokens[1])
            #expect(attempts.map(\.status) == [429, 503, 200])
            #expect(attempts.map(\.receivedAt) == [start, start.addingTimeInterval(2), start.addingTimeInterval(7)])
            #expect(Set(attempts.compactMap(\.apnsID)).count == 1, "one push, sent three times")
            let run = try #require(try await instance.store.runs(scheduleID: schedule.id).first)
            #expect((run.devices, run.sent, run.failed) == (3, 3, 0))
        }
    }

    @Test(
        "a push refused in all of the client's attempts counts as failed, and the device stays",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func clientGivesUp(_ backend: Backend) async throws {
        try await WakeHarness.inMemory(backend, minimumInterval: 0) { harness in
            let token = WakeHarness.tokens(1)[0]
            try await harness.register([token])
            harness.apns.always(token, .serviceUnavailable(retryAfter: 1))
            let instance = harness.instance
            let schedule = try await instance.create([
                "name": "unavailable", "mode": "apns", "every": "1h", "audience": ["all": true],
            ])
            harness.clock.advance(3_600)
            let worker = instance.worker
            async let ran = worker.runDueJobs()
            try await harness.clock.advanceToNextDeadline()
            try await harness.clock.advanceToNextDeadline()
            #expect(try await ran == 1)
            #expect(harness.apns.requests(to: token).map(\.status) == [503, 503, 503], "the policy's 3 attempts")
            let run = try #require(try await instance.store.runs(scheduleID: schedule.id).first)
            #expect((run.devices, run.sent, run.failed) == (1, 0, 1))
            let device = try await instance.devices.device(
                app: WakeHarness.topic,
                environment: .production,
                token: token
            )
            #expect(device?.status == .active)
        }
    }

    @Test("the push as recorded: background, priority 5, the app's topic, no collapse id, data beside aps")
    func headers() async throws {
        try await WakeHarness.inMemory(.sqliteMemory, minimumInterval: 0) { harness in
            let tokens = WakeHarness.tokens(2)
            try await harness.register(tokens)
            _ = try await harness.instance.create([
                "name": "headers", "mode": "apns", "every": "1h", "audience": ["all": true],
                "data": ["kind": "refresh"],
            ])
            harness.clock.advance(3_600)
            #expect(try await harness.instance.worker.runDueJobs() == 1)
            let requests = harness.apns.requests
            #expect(Set(requests.compactMap(\.deviceToken)) == Set(tokens))
            for request in requests {
                #expect(request.method == "POST")
                #expect(request.pushType == "background")
                #expect(request.priority == "5")
                #expect(request.topic == WakeHarness.topic)
                #expect(request.collapseID == nil)
                #expect(request.header("authorization")?.hasPrefix("bearer ") == true)
                #expect(request.payload?["aps"] == .object(["content-available": .integer(1)]))
                #expect(request.payload?["kind"] == "refresh")
                #expect(request.endpoint == APNSEndpoints().push(.production))
            }
            #expect(Set(requests.compactMap(\.apnsID)).count == 2, "one apns-id per push")
        }
    }
}
