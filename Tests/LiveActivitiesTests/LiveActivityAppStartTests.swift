import APNs
import APNsTestSupport
import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import Testing

@testable import LiveActivities

/// Activities the app starts itself (`"start": "app"`): no push-to-start is sent or needed, the
/// activity runs from its creation, and its updates take the routes a pushed start's do.
@Suite("LiveActivities: activities the app starts")
struct LiveActivityAppStartTests {
    let t = Date(timeIntervalSince1970: 1_790_000_000)

    static func appStarted(audience: LiveActivityAudience = .users(["u1"])) -> LiveActivityRequest {
        var request = LiveActivityHarness.request(channel: nil)
        request.audience = audience
        request.start = .app
        return request
    }

    @Test(
        "no push-to-start token needed and none sent; started at once; updated by update token and by silent push",
        arguments: Backend.allCases
    )
    func updatedByUpdateTokenAndSilentPush(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await LiveActivityHarness.inMemory(backend, clock: clock, retryPolicy: .never) { stack in
            // No push-to-start token is registered: a push start would be refused with 422.
            let (activity, created) = try await stack.service.create(Self.appStarted())
            #expect(created)
            #expect(activity.state == .started)
            #expect(activity.startedAt == t)
            #expect(try await stack.store.activity(activity.id)?.users == ["u1"])
            #expect(try await stack.worker.runDueJobs() == 0, "no start job: only the expiry, 8 hours on")
            #expect(stack.apns.requests.isEmpty, "nothing is pushed to start it")

            let devices = ["d1", "d2"].map { String(repeating: $0, count: 32) }
            let updateToken = String(repeating: "e1", count: 32)
            for (activityID, device, update) in [("ios-0", devices[0], updateToken), ("ios-1", devices[1], nil)] {
                try await stack.report(activity, activityID, device: device, update: update)
            }
            let routes = try await stack.service.update(
                activity.id,
                LiveActivityUpdate(event: .update, contentState: .object(["step": .integer(2)]))
            )
            #expect(routes.updateToken == 1)
            #expect(routes.silent == 1)
            #expect(try await stack.worker.runDueJobs() == 1)
            let live = stack.apns.requests.filter { $0.pushType == "liveactivity" }
            #expect(live.compactMap(\.deviceToken) == [updateToken])
            #expect(live.first?.payload?["aps"]?["event"] == "update")
            #expect(live.first?.payload?["aps"]?["content-state"] == .object(["step": .integer(2)]))
            let silent = stack.apns.requests.filter { $0.pushType == "background" }
            #expect(silent.compactMap(\.deviceToken) == [devices[1]])
            #expect(silent.first?.payload?["aps"]?["content-available"] == .integer(1))

            // Eight hours after its creation iOS has ended it: the expiry job marks it so.
            clock.advance(LiveActivityLimits.maximumActivityDuration)
            #expect(try await stack.worker.runDueJobs() == 1)
            #expect(try await stack.store.activity(activity.id)?.state == .expired)
        }
    }

    @Test("the same body again answers the same activity; its end_at is scheduled", arguments: [Backend.sqliteMemory])
    func repeatedAndEndAt(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await LiveActivityHarness.inMemory(backend, clock: clock, retryPolicy: .never) { stack in
            var request = Self.appStarted()
            request.id = UUID()
            request.endAt = Int64(t.timeIntervalSince1970) + 600
            let (first, created) = try await stack.service.create(request)
            let (again, createdAgain) = try await stack.service.create(request)
            #expect(created && !createdAgain)
            #expect(again.id == first.id)
            clock.advance(600)
            #expect(try await stack.worker.runDueJobs() >= 1, "the end at end_at")
            #expect(try await stack.store.activity(first.id)?.state == .ended)
        }
    }

    @Test("an audience that selects nobody is refused with 422 no_users, naming audience")
    func nobody() async throws {
        try await LiveActivityHarness.inMemory(.sqliteMemory, clock: ManualClock(t)) { stack in
            await #expect {
                _ = try await stack.service.create(Self.appStarted(audience: .all))
            } throws: { error in
                let refusal = error as? LiveActivityError
                return refusal?.code == "no_users" && refusal?.field == "audience" && refusal?.kind == .unprocessable
            }
        }
    }

    @Test("the body: start is push or app; an app start needs no alert, takes no push-to-start tokens or start_at")
    func parsing() throws {
        let now = t
        func parse(_ extra: String, alert: Bool = true) throws(LiveActivityError) -> LiveActivityRequest {
            let alertField = alert ? #""alert": {"title": "T", "body": "B"}, "# : ""
            let body =
                #"{"attributes_type": "A", "content_state": {}, "# + alertField
                + #""audience": {"users": ["u1"]}"# + extra + "}"
            return try LiveActivityInput.parseCreate(Array(body.utf8), now: now)
        }
        #expect(try parse("").start == nil)
        #expect(try parse(#", "start": "push""#).start == nil, "a push start is stored as before")
        #expect(try parse(#", "start": "app""#, alert: false).start == .app)
        #expect(throws: LiveActivityError.self) { try parse(#", "start": "push""#, alert: false) }
        for (extra, field) in [
            (#", "start": "later""#, "start"),
            (#", "start": 1"#, "start"),
            (#", "start": "app", "start_at": \#(Int(now.timeIntervalSince1970) + 60)"#, "start_at"),
        ] {
            #expect {
                _ = try parse(extra)
            } throws: { error in
                (error as? LiveActivityError)?.field == field
            }
        }
        let tokens =
            #"{"attributes_type": "A", "content_state": {}, "start": "app", "audience": {"tokens": [""#
            + String(repeating: "ab", count: 32) + #""]}}"#
        #expect {
            _ = try LiveActivityInput.parseCreate(Array(tokens.utf8), now: now)
        } throws: { error in
            (error as? LiveActivityError)?.field == "audience"
        }
    }
}
