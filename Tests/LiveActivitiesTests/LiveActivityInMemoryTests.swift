import APNs
import APNsTestSupport
import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import Testing

@testable import LiveActivities

/// Live Activities against the in-memory APNs: no socket, no real clock. Push-to-starts, updates
/// along each route and broadcasts, with the answers scripted per token and the requests read
/// back as the client wrote them.
@Suite("LiveActivities: sends against the in-memory APNs")
struct LiveActivityInMemoryTests {
    let t = Date(timeIntervalSince1970: 1_790_000_000)
    let liveTopic = LiveActivityHarness.topic + ".push-type.liveactivity"

    @Test(
        "push-to-start with mixed outcomes: sent, dead token dropped, refused for now and sent by the next job",
        arguments: Backend.allCases
    )
    func startMixed(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await LiveActivityHarness.inMemory(backend, clock: clock, retryPolicy: .never) { stack in
            let tokens = ["a1", "b2", "c3"].map { String(repeating: $0, count: 32) }
            // Registered an hour ago; APNs says the app left the device since.
            for token in tokens { try await stack.registerPushToStart(token, at: t.addingTimeInterval(-3_600)) }
            stack.apns.always(tokens[1], .unregistered(at: t.addingTimeInterval(-60)))
            stack.apns.script(tokens[2], .internalServerError)
            let (activity, _) = try await stack.service.create(LiveActivityHarness.request(channel: nil))
            #expect(try await stack.worker.runDueJobs() == 1, "the start")
            #expect(try await stack.store.activity(activity.id)?.state == .started)

            let starts = stack.apns.requests
            #expect(starts.count == 3)
            for request in starts {
                #expect(request.pushType == "liveactivity")
                #expect(request.topic == liveTopic)
                #expect(request.priority == "10")
                #expect(request.payload?["aps"]?["event"] == "start")
                #expect(request.payload?["aps"]?["attributes-type"] == "LoanAttributes")
            }
            #expect(stack.apns.requests(to: tokens[0]).map(\.status) == [200])
            #expect(stack.apns.requests(to: tokens[1]).map(\.status) == [410])
            #expect(stack.apns.requests(to: tokens[2]).map(\.status) == [500])
            let deliveries = try await stack.store.deliveries(of: activity.id).filter { $0.event == "start" }
            #expect(deliveries.compactMap(\.status).sorted() == [200, 410, 500])
            #expect(deliveries.first { $0.status == 410 }?.reason == "Unregistered")
            let live = try await stack.store.livePushToStartTokens(
                app: LiveActivityHarness.topic,
                environment: .production,
                attributesType: "LoanAttributes",
                tokens: tokens
            )
            #expect(Set(live) == [tokens[0], tokens[2]], "the dead token is dropped")

            // The token APNs refused for now gets its start from a job of its own, after its backoff.
            clock.advance(600)
            #expect(try await stack.worker.runDueJobs() == 1)
            #expect(stack.apns.requests(to: tokens[2]).map(\.status) == [500, 200])
            #expect(stack.apns.requests(to: tokens[0]).count == 1, "not sent twice")
            #expect(stack.apns.requests(to: tokens[1]).count == 1, "never to the dead token again")
        }
    }

    @Test(
        "an update goes to each instance's update token, or by silent push; a dead update token falls back at once",
        arguments: Backend.allCases
    )
    func updateRoutes(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await LiveActivityHarness.inMemory(backend, clock: clock, retryPolicy: .never) { stack in
            let activity = try await started(stack)
            let devices = ["d1", "d2", "d3"].map { String(repeating: $0, count: 32) }
            let updateTokens = ["e1", "e2"].map { String(repeating: $0, count: 32) }
            try await register(stack, activity, "ios-0", device: devices[0], update: updateTokens[0])
            try await register(stack, activity, "ios-1", device: devices[1], update: updateTokens[1])
            try await register(stack, activity, "ios-2", device: devices[2], update: nil)
            stack.apns.always(updateTokens[1], .unregistered(at: t))
            let before = stack.apns.requests.count

            let routes = try await stack.service.update(
                activity.id,
                LiveActivityUpdate(
                    event: .update,
                    contentState: .object(["step": .integer(2)]),
                    staleDate: Int64(t.timeIntervalSince1970) + 600,
                    priority: 5
                )
            )
            #expect(routes.updateToken == 2)
            #expect(routes.silent == 1)
            #expect(try await stack.worker.runDueJobs() == 1)

            let sent = Array(stack.apns.requests.dropFirst(before))
            let live = sent.filter { $0.pushType == "liveactivity" }
            #expect(Set(live.compactMap(\.deviceToken)) == Set(updateTokens))
            for request in live {
                #expect(request.topic == liveTopic)
                #expect(request.priority == "5", "the update's priority")
                #expect(request.payload?["aps"]?["event"] == "update")
                #expect(request.payload?["aps"]?["content-state"] == .object(["step": .integer(2)]))
                #expect(request.payload?["aps"]?["stale-date"] == .integer(Int64(t.timeIntervalSince1970) + 600))
            }
            let silent = sent.filter { $0.pushType == "background" }
            #expect(
                Set(silent.compactMap(\.deviceToken)) == [devices[1], devices[2]],
                "the instance without an update token, and the one whose update token is dead"
            )
            for request in silent {
                #expect(request.topic == LiveActivityHarness.topic)
                #expect(request.priority == "5")
                #expect(request.payload?["aps"]?["content-available"] == .integer(1))
            }
            #expect(stack.apns.requests(to: updateTokens[1]).map(\.status) == [410])
            let instances = try await stack.store.instances(of: activity.id)
            #expect(instances.first { $0.activityID == "ios-1" }?.updateToken == nil, "the dead update token dropped")
            #expect(instances.first { $0.activityID == "ios-0" }?.updateToken == updateTokens[0])
            #expect(instances.allSatisfy { !$0.unreachable })
        }
    }

    @Test(
        "a dead device token makes its instance unreachable; later updates skip it",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func deadDevice(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await LiveActivityHarness.inMemory(backend, clock: clock, retryPolicy: .never) { stack in
            let activity = try await started(stack)
            let device = String(repeating: "f1", count: 32)
            try await register(stack, activity, "ios-0", device: device, update: nil)
            stack.apns.always(device, .badDeviceToken)
            _ = try await stack.service.update(
                activity.id,
                LiveActivityUpdate(event: .update, contentState: .object(["step": .integer(2)]))
            )
            #expect(try await stack.worker.runDueJobs() == 1)
            #expect(stack.apns.requests(to: device).map(\.status) == [400])
            #expect(try await stack.store.instances(of: activity.id).first?.unreachable == true)
            let update = try await stack.store.deliveries(of: activity.id).filter { $0.event == "update" }
            #expect(update.map(\.reason) == ["BadDeviceToken"])

            let routes = try await stack.service.update(
                activity.id,
                LiveActivityUpdate(event: .update, contentState: .object(["step": .integer(3)]))
            )
            #expect(routes.silent == 0)
            try await stack.worker.runDueJobs()
            #expect(stack.apns.requests(to: device).count == 1, "not sent to again")
        }
    }

    @Test(
        "the client retries a 429 and a 503 after APNs' retry-after on the manual clock",
        arguments: Backend.allCases
    )
    func clientRetries(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await LiveActivityHarness.inMemory(backend, clock: clock) { stack in
            let activity = try await started(stack)
            let device = String(repeating: "f2", count: 32)
            let updateToken = String(repeating: "f3", count: 32)
            try await register(stack, activity, "ios-0", device: device, update: updateToken)
            stack.apns.script(
                updateToken,
                .tooManyRequests(retryAfter: 3),
                .serviceUnavailable(retryAfter: 4),
                .success
            )
            _ = try await stack.service.update(
                activity.id,
                LiveActivityUpdate(event: .update, contentState: .object(["step": .integer(2)]))
            )
            let start = clock.now()
            async let ran = stack.worker.runDueJobs()
            #expect(try await clock.advanceToNextDeadline() == start.addingTimeInterval(3))
            #expect(try await clock.advanceToNextDeadline() == start.addingTimeInterval(7))
            #expect(try await ran == 1)
            let attempts = stack.apns.requests(to: updateToken)
            #expect(attempts.map(\.status) == [429, 503, 200])
            #expect(attempts.map(\.receivedAt) == [start, start.addingTimeInterval(3), start.addingTimeInterval(7)])
            #expect(Set(attempts.compactMap(\.apnsID)).count == 1, "one push, sent three times")
            let update = try await stack.store.deliveries(of: activity.id).filter { $0.event == "update" }
            #expect(update.map(\.status) == [200])
            #expect(stack.apns.requests(to: device).isEmpty, "no silent fallback for a push that got through")
        }
    }

    @Test("an activity with a channel is updated by one broadcast: channel id, push type, expiration 0, priority")
    func broadcast() async throws {
        let clock = ManualClock(t)
        let channels = RecordingChannels()
        try await LiveActivityHarness.inMemory(.sqliteMemory, clock: clock, channels: { _ in channels }) { stack in
            try await stack.registerPushToStart(String(repeating: "a9", count: 32), at: t)
            let (activity, _) = try await stack.service.create(
                LiveActivityHarness.request(channel: .create(storagePolicy: 0))
            )
            let channel = try #require(activity.channelID)
            #expect(try await stack.worker.runDueJobs() == 1, "the start")
            let routes = try await stack.service.update(
                activity.id,
                LiveActivityUpdate(event: .update, contentState: .object(["step": .integer(2)]), priority: 5)
            )
            #expect(routes.broadcast == 1)
            #expect(try await stack.worker.runDueJobs() == 1)
            let request = try #require(stack.apns.requests.last)
            #expect(request.path == "/4/broadcasts/apps/\(LiveActivityHarness.topic)")
            #expect(request.header("apns-channel-id") == channel)
            #expect(request.pushType == "liveactivity")
            #expect(request.expiration == "0")
            #expect(request.priority == "5")
            #expect(request.payload?["aps"]?["content-state"] == .object(["step": .integer(2)]))
            #expect(request.endpoint == APNSEndpoints().push(.production))
            let update = try await stack.store.deliveries(of: activity.id).filter { $0.event == "update" }
            #expect(update.map(\.route) == [.broadcast])
            #expect(update.map(\.status) == [200])
        }
    }

    /// An activity of `u1` started by push-to-start to one token.
    func started(_ stack: LiveActivityHarness) async throws -> LiveActivity {
        try await stack.registerPushToStart(String(repeating: "a0", count: 32), at: t)
        let (activity, _) = try await stack.service.create(LiveActivityHarness.request(channel: nil))
        #expect(try await stack.worker.runDueJobs() == 1, "the start")
        return activity
    }

    /// Reports an instance of `activity` for `u1`.
    func register(
        _ stack: LiveActivityHarness,
        _ activity: LiveActivity,
        _ activityID: String,
        device: String,
        update: String?
    ) async throws {
        try await stack.report(activity, activityID, device: device, update: update)
    }
}
