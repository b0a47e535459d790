import APNs
import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import Storage
import Testing

@testable import LiveActivities

/// Who may report an instance, whose it stays, and how many one user may hold (issue 33): on
/// every backend, through the service as the routes call it.
@Suite("LiveActivities: instances belong to the activity's users, within quotas")
struct LiveActivityOwnershipTests {
    let t = Date(timeIntervalSince1970: 1_795_000_000)

    static func token(_ n: Int) -> String { String(format: "%064x", n) }

    static func instance(_ id: String, device: Int) -> LiveActivityInput.Instance {
        LiveActivityInput.Instance(activityID: id, deviceToken: token(device), updateToken: nil, state: .active)
    }

    static func register(
        _ store: LiveActivityStore,
        _ token: String,
        user: String,
        type: String = "LoanAttributes",
        at: Date,
        maximum: Int = 20
    ) async throws -> (PushToStartToken, created: Bool) {
        try await store.register(
            PushToStartRegistration(
                app: LiveActivityHarness.topic,
                environment: .production,
                attributesType: type,
                token: token,
                userID: user,
                registeredAt: at
            ),
            maximumPerUser: maximum
        )
    }

    static func refusal(_ body: () async throws -> Void) async -> LiveActivityError? {
        do {
            try await body()
            return nil
        } catch let error as LiveActivityError {
            return error
        } catch {
            Issue.record("not a LiveActivityError: \(error)")
            return nil
        }
    }

    @Test(
        "a tokens audience: the token's user may report; an unrelated user gets exactly the unknown id's 404",
        arguments: Backend.allCases
    )
    func tokensAudience(backend: Backend) async throws {
        try await LiveActivityHarness.with(backend, clock: ManualClock(t)) { stack in
            _ = try await Self.register(stack.store, Self.token(1), user: "u2", at: t)
            _ = try await Self.register(stack.store, Self.token(2), user: "u3", at: t)
            var request = LiveActivityHarness.request(channel: nil)
            request.audience = .tokens([Self.token(1)])
            let (activity, _) = try await stack.service.create(request)
            #expect(try await stack.worker.runDueJobs() == 1, "the start")
            #expect(try await stack.store.activity(activity.id)?.users == ["u2"], "the token's user is recorded")

            let stranger = await Self.refusal {
                _ = try await stack.service.register(
                    Self.instance("ios-x", device: 9),
                    for: activity.id,
                    userID: "u3",
                    app: nil
                )
            }
            let unknown = await Self.refusal {
                _ = try await stack.service.register(
                    Self.instance("ios-x", device: 9),
                    for: UUID(),
                    userID: "u3",
                    app: nil
                )
            }
            #expect(stranger != nil)
            #expect(stranger == unknown, "the same refusal as for an id no activity has")
            #expect(stranger?.code == "not_found")
            #expect(try await stack.store.instances(of: activity.id).isEmpty, "nothing written")

            let (instance, created) = try await stack.service.register(
                Self.instance("ios-1", device: 10),
                for: activity.id,
                userID: "u2",
                app: nil
            )
            #expect(created)
            #expect(instance.userID == "u2")
        }
    }

    @Test(
        "a users audience: another member re-reporting an instance gets 403 not_your_instance and changes nothing",
        arguments: Backend.allCases
    )
    func instanceOwner(backend: Backend) async throws {
        try await LiveActivityHarness.with(backend, clock: ManualClock(t)) { stack in
            _ = try await Self.register(stack.store, Self.token(1), user: "u1", at: t)
            var request = LiveActivityHarness.request(channel: nil)
            request.audience = .users(["u1", "u2"])
            let (activity, _) = try await stack.service.create(request)
            _ = try await stack.worker.runDueJobs()
            _ = try await stack.service.register(
                LiveActivityInput.Instance(
                    activityID: "ios-1",
                    deviceToken: Self.token(10),
                    updateToken: Self.token(11),
                    state: .active
                ),
                for: activity.id,
                userID: "u1",
                app: nil
            )
            let refusal = await Self.refusal {
                _ = try await stack.service.register(
                    LiveActivityInput.Instance(
                        activityID: "ios-1",
                        deviceToken: Self.token(20),
                        updateToken: Self.token(21),
                        state: .active
                    ),
                    for: activity.id,
                    userID: "u2",
                    app: nil
                )
            }
            #expect(refusal?.code == "not_your_instance")
            #expect(refusal?.kind == .forbidden)
            let instances = try await stack.store.instances(of: activity.id)
            #expect(instances.count == 1)
            #expect(instances.first?.userID == "u1")
            #expect(instances.first?.deviceToken == Self.token(10))
            #expect(instances.first?.updateToken == Self.token(11))

            // Its owner may report it again (a new update token).
            let (again, created) = try await stack.service.register(
                LiveActivityInput.Instance(
                    activityID: "ios-1",
                    deviceToken: nil,
                    updateToken: Self.token(12),
                    state: .active
                ),
                for: activity.id,
                userID: "u1",
                app: nil
            )
            #expect(!created)
            #expect(again.updateToken == Self.token(12))
            #expect(again.deviceToken == Self.token(10))
        }
    }

    @Test(
        "at most maximumInstancesPerUser instances per user, also when reports race",
        arguments: Backend.allCases
    )
    func instanceQuota(backend: Backend) async throws {
        try await LiveActivityHarness.with(backend, clock: ManualClock(t)) { stack in
            _ = try await Self.register(stack.store, Self.token(1), user: "u1", at: t)
            let service = LiveActivityService(
                jobs: stack.jobs,
                quotas: LiveActivityQuotas(maximumInstancesPerUser: 4)
            )
            var request = LiveActivityHarness.request(channel: nil)
            request.audience = .users(["u1", "u2"])
            let (activity, _) = try await service.create(request)
            _ = try await stack.worker.runDueJobs()
            // Twelve new instances at once: exactly four are taken.
            let outcomes = try await withThrowingTaskGroup(of: String?.self) { group in
                for n in 0..<12 {
                    group.addTask {
                        do {
                            _ = try await service.register(
                                Self.instance("ios-\(n)", device: 100 + n),
                                for: activity.id,
                                userID: "u1",
                                app: nil
                            )
                            return nil
                        } catch let error as LiveActivityError {
                            return error.code
                        }
                    }
                }
                var codes: [String?] = []
                for try await code in group { codes.append(code) }
                return codes
            }
            #expect(outcomes.filter { $0 == nil }.count == 4, "\(outcomes)")
            #expect(outcomes.filter { $0 == "too_many_instances" }.count == 8, "\(outcomes)")
            let mine = try await stack.store.instances(of: activity.id).filter { $0.userID == "u1" }
            #expect(mine.count == 4)
            // A known instance may still be reported; another user has a quota of their own.
            let (_, created) = try await service.register(
                Self.instance(mine[0].activityID, device: 200),
                for: activity.id,
                userID: "u1",
                app: nil
            )
            #expect(!created)
            let (_, other) = try await service.register(
                Self.instance("ios-u2", device: 300),
                for: activity.id,
                userID: "u2",
                app: nil
            )
            #expect(other)
            let refusal = await Self.refusal {
                _ = try await service.register(
                    Self.instance("ios-99", device: 399),
                    for: activity.id,
                    userID: "u1",
                    app: nil
                )
            }
            #expect(refusal?.code == "too_many_instances")
            #expect(refusal?.kind == .conflict)
        }
    }

    @Test(
        "an activity with no users (a tokens audience no user holds) takes no instance",
        arguments: Backend.allCases
    )
    func noUsers(backend: Backend) async throws {
        try await LiveActivityHarness.with(backend, clock: ManualClock(t)) { stack in
            var request = LiveActivityHarness.request(channel: nil)
            request.audience = .tokens([Self.token(5)])
            let (activity, _) = try await stack.service.create(request)
            _ = try await stack.worker.runDueJobs()
            #expect(try await stack.store.activity(activity.id)?.users == [])
            let refusal = await Self.refusal {
                _ = try await stack.service.register(
                    Self.instance("ios-1", device: 9),
                    for: activity.id,
                    userID: "u1",
                    app: nil
                )
            }
            #expect(refusal?.code == "not_found")
        }
    }

    @Test(
        "push-to-start tokens: past the quota the least recently registered is evicted, also when registrations race",
        arguments: Backend.allCases
    )
    func pushToStartQuota(backend: Backend) async throws {
        try await LiveActivityHarness.with(backend, clock: ManualClock(t)) { stack in
            let store = stack.store
            // Two attributes types share the user's quota of 3.
            for n in 1...3 {
                let (token, created) = try await Self.register(
                    store,
                    Self.token(n),
                    user: "u1",
                    type: n == 2 ? "Other" : "LoanAttributes",
                    at: t.addingTimeInterval(Double(n)),
                    maximum: 3
                )
                #expect(created)
                #expect(token.status == "active")
            }
            _ = try await Self.register(store, Self.token(4), user: "u1", at: t.addingTimeInterval(4), maximum: 3)
            let states = try await store.database.query(
                "SELECT token, status, invalid_reason FROM push_to_start_tokens WHERE user_id = 'u1' ORDER BY token",
                []
            ).map {
                "\(try $0.string("token").suffix(1)):\(try $0.string("status")):\(try $0.optionalString("invalid_reason") ?? "-")"
            }
            #expect(states == ["1:invalid:evicted", "2:active:-", "3:active:-", "4:active:-"])
            // Another user's quota is their own; a token taken from another user counts as new.
            let (taken, created) = try await Self.register(
                store,
                Self.token(3),
                user: "u2",
                at: t.addingTimeInterval(5),
                maximum: 3
            )
            #expect(created, "the answer does not tell that the token was known")
            #expect(taken.userID == "u2")
            // An evicted token registered again is active at once (u1 holds 2 and 4 now, 3 went to u2).
            let (back, _) = try await Self.register(
                store,
                Self.token(1),
                user: "u1",
                at: t.addingTimeInterval(6),
                maximum: 3
            )
            #expect(back.status == "active")
            _ = try await Self.register(store, Self.token(5), user: "u1", at: t.addingTimeInterval(7), maximum: 3)
            let u1Active = try await store.database.query(
                "SELECT token FROM push_to_start_tokens WHERE user_id = 'u1' AND status = 'active' ORDER BY token",
                []
            ).map { String(try $0.string("token").suffix(1)) }
            #expect(u1Active == ["1", "4", "5"], "2, the least recently registered, was evicted")

            // Ten registrations of one user at once leave exactly three active.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 10..<20 {
                    group.addTask {
                        _ = try await Self.register(
                            store,
                            Self.token(n),
                            user: "u9",
                            at: t.addingTimeInterval(Double(n)),
                            maximum: 3
                        )
                    }
                }
                try await group.waitForAll()
            }
            let active = try await store.database.query(
                "SELECT token FROM push_to_start_tokens WHERE user_id = 'u9' AND status = 'active'",
                []
            )
            #expect(active.count == 3)
            let evicted = try await store.database.query(
                "SELECT token FROM push_to_start_tokens WHERE user_id = 'u9' AND invalid_reason = 'evicted'",
                []
            )
            #expect(evicted.count == 3, "the 3 latest evicted are kept, the 4 before them forgotten")
            let rows = try await store.database.query(
                "SELECT token FROM push_to_start_tokens WHERE user_id = 'u9'",
                []
            )
            #expect(rows.count == 6, "no user's rows grow without bound")
        }
    }
}

/// `LiveActivities 5` (released as 18) on a database of before: an activity already started gets as users the owners of
/// the push-to-start tokens its deliveries say it was sent to, and no one else.
@Suite("LiveActivities: migration 5 backfills the users of activities started before it")
struct LiveActivityUsersBackfillTests {
    @Test("users come from the recorded push-to-starts", arguments: Backend.allCases)
    func backfill(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            let logger = LiveActivityStoreTests.logger
            try await Migrator.migrate(db, LiveActivityMigrations.all.filter { $0.number <= 4 }, logger: logger)
            let id = "6f1c2d3e-0000-4000-8000-000000000018"
            try await db.execute(
                """
                INSERT INTO live_activities (id, app, environment, attributes_type, request, request_hash, state,
                    channel_created, content_state, last_timestamp, created_at, updated_at)
                VALUES ($1, 'com.example.app', 'production', 'T', '{}', 'h', 'started', 0, '{}', 1, 0, 0)
                """,
                [.text(id)]
            )
            for (token, user) in [("a1", "u1"), ("a2", "u2"), ("a3", "u3")] {
                try await db.execute(
                    """
                    INSERT INTO push_to_start_tokens (app, environment, attributes_type, token, user_id, status,
                        created_at, updated_at)
                    VALUES ('com.example.app', 'production', 'T', $1, $2, 'active', 0, 0)
                    """,
                    [.text(token), .text(user)]
                )
            }
            // Sent to a1 and a2 (a2 refused by APNs, still sent); a3 never; an update to a3 is no start.
            for (n, token, route) in [(1, "a1", "push_to_start"), (2, "a2", "push_to_start"), (3, "a3", "silent")] {
                try await db.execute(
                    """
                    INSERT INTO live_activity_deliveries (live_activity_id, at, id, event, route, token)
                    VALUES ($1, $2, $3, 'start', $4, $5)
                    """,
                    [.text(id), .integer(Int64(n)), .text("d\(n)"), .text(route), .text(token)]
                )
            }
            try await Migrator.migrate(db, LiveActivityMigrations.all, logger: logger)
            let users = try await db.query(
                "SELECT user_id FROM live_activity_users WHERE live_activity_id = $1 ORDER BY user_id",
                [.text(id)]
            ).map { try $0.string("user_id") }
            #expect(users == ["u1", "u2"])
        }
    }
}
