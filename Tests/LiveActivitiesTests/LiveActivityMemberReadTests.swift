import APNs
import APNsTestSupport
import DatabaseTestSupport
import Foundation
import HTTPRouting
import HeraldCore
import Jobs
import Testing

@testable import LiveActivities

/// What a member reads under `/v1/client` (widgets, App Intents): its own activities only, as
/// unknown to everyone else as an id that does not exist.
@Suite("LiveActivities: what a member reads")
struct LiveActivityMemberReadTests {
    let t = Date(timeIntervalSince1970: 1_790_000_000)

    @Test(
        "a user reads an activity of theirs; another user, or another app's token, finds nothing",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func read(backend: Backend) async throws {
        try await LiveActivityHarness.inMemory(backend, clock: ManualClock(t)) { stack in
            var request = LiveActivityHarness.request(channel: nil)
            request.start = .app
            let (activity, _) = try await stack.service.create(request)
            let read = try await stack.service.read(activity.id, userID: "u1", app: LiveActivityHarness.topic)
            #expect(read.id == activity.id)
            #expect(read.state == .started)
            for (user, app) in [("u2", nil), ("u1", "com.example.other")] as [(String, String?)] {
                await #expect(throws: LiveActivityError.notFound) {
                    _ = try await stack.service.read(activity.id, userID: user, app: app)
                }
            }
            await #expect(throws: LiveActivityError.notFound) {
                _ = try await stack.service.read(UUID(), userID: "u1", app: nil)
            }
        }
    }

    @Test("upcoming: running activities first, then scheduled ones by start time; no ended ones, none of others")
    func upcoming() async throws {
        let clock = ManualClock(t)
        try await LiveActivityHarness.inMemory(.sqliteMemory, clock: clock) { stack in
            try await stack.registerPushToStart(String(repeating: "a0", count: 32), at: t)
            func scheduled(in seconds: Int64) async throws -> UUID {
                var request = LiveActivityHarness.request(channel: nil)
                request.startAt = Int64(t.timeIntervalSince1970) + seconds
                return try await stack.service.create(request).0.id
            }
            let later = try await scheduled(in: 7_200)
            let sooner = try await scheduled(in: 3_600)
            // A push start due now whose job has not run yet: scheduled, without a start_at.
            let pending = try await stack.service.create(LiveActivityHarness.request(channel: nil)).0.id
            var appStarted = LiveActivityHarness.request(channel: nil)
            appStarted.start = .app
            let running = try await stack.service.create(appStarted).0.id
            let ended = try await stack.service.create(appStarted).0.id
            _ = try await stack.service.end(
                ended,
                LiveActivityUpdate(event: .end, contentState: .object(["step": .integer(9)])),
                hasContent: true
            )
            var others = appStarted
            others.audience = .users(["u2"])
            _ = try await stack.service.create(others)

            let activities = try await stack.service.upcoming(userID: "u1", app: nil)
            let listed = activities.map(\.id)
            #expect(listed == [running, pending, sooner, later], "running first, then by start time")

            // With another feature's items (polls): one list by time, an activity before an item
            // of the same time, an undated item last, cut at the limit.
            let polls = [
                ClientUpcomingItem(at: t, body: ["id": "p-now"]),
                ClientUpcomingItem(at: t.addingTimeInterval(5_400), body: ["id": "p-90m"]),
                ClientUpcomingItem(at: nil, body: ["id": "p-open"]),
            ]
            let merged = LiveActivityUpcomingBody.merged(activities: activities, kind: "poll", others: polls, limit: 50)
            func name(_ item: LiveActivityUpcomingBody.Item) -> String {
                switch item {
                case .activity(let activity):
                    [running: "running", pending: "pending", sooner: "sooner", later: "later"][activity.id] ?? "?"
                case .other(_, let other): other.body["id"]?.stringValue ?? "?"
                }
            }
            #expect(merged.map(name) == ["running", "pending", "p-now", "sooner", "p-90m", "later", "p-open"])
            let cut = LiveActivityUpcomingBody.merged(activities: activities, kind: "poll", others: polls, limit: 4)
            #expect(cut.map(name) == ["running", "pending", "p-now", "sooner"])
            let json = try JSONValue.parse(
                HTTPResponse.json(LiveActivityUpcomingBody(items: Array(merged[2...3]))).body
            )
            guard case .array(let items) = json["items"] else {
                Issue.record("no items list: \(json)")
                return
            }
            #expect(items.map { $0["type"] } == ["poll", "live_activity"])
            #expect(items.first?["poll"]?["id"] == "p-now")
            #expect(items.last?["live_activity"]?["id"] == .string(LiveActivityID.text(sooner)))
            #expect(items.last?["at"] == .string(RFC3339.string(from: t.addingTimeInterval(3_600))))
            #expect(try await stack.service.upcoming(userID: "u1", app: "com.example.other").isEmpty)
            #expect(try await stack.service.upcoming(userID: "u2", app: nil).count == 1)
        }
    }

    @Test("a token the API does not give back whole is named a prefix")
    func tokenPrefixes() {
        let audience = HTTPResponse.json(
            LiveActivityAudienceBody(audience: .tokens([String(repeating: "ab", count: 32)])).json
        )
        #expect(String(decoding: audience.body, as: UTF8.self) == #"{"token_prefixes":["abababab"]}"#)
    }

}
