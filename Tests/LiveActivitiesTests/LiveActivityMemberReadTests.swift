import APNs
import APNsTestSupport
import DatabaseTestSupport
import Foundation
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

            let listed = try await stack.service.upcoming(userID: "u1", app: nil).map(\.id)
            #expect(listed == [running, pending, sooner, later], "running first, then by start time")
            #expect(try await stack.service.upcoming(userID: "u1", app: "com.example.other").isEmpty)
            #expect(try await stack.service.upcoming(userID: "u2", app: nil).count == 1)
        }
    }
}
