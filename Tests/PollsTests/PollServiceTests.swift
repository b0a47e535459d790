import APNs
import APNsTestSupport
import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import LiveActivities
import Storage
import Testing

@testable import Polls

/// Polls on every backend: create with a Live Activity, votes and their broadcasts, the final
/// result exactly once (by the last vote, the host, the API key or `closes_at`), and who may see
/// a poll.
@Suite("Polls: votes and the final result")
struct PollServiceTests {
    let t = Date(timeIntervalSince1970: 1_790_000_000)

    /// The `event` of each push APNs received, in order (`start`, `update`, `end`).
    static func events(_ apns: InMemoryAPNs) -> [String] {
        apns.requests.compactMap { request in
            guard case .object(let payload)? = try? JSONValue.parse(request.body),
                case .object(let aps)? = payload["aps"], case .string(let event)? = aps["event"]
            else { return nil }
            return event
        }
    }

    /// The `poll` of the content state of each broadcast update or end, in order.
    static func broadcastPolls(_ apns: InMemoryAPNs) -> [[String: JSONValue]] {
        apns.requests.compactMap { request in
            guard case .object(let payload)? = try? JSONValue.parse(request.body),
                case .object(let aps)? = payload["aps"], case .object(let state)? = aps["content-state"],
                case .object(let poll)? = state["poll"], aps["event"] != .string("start")
            else { return nil }
            return poll
        }
    }

    @Test("create, vote, change the vote, final by the last vote, then 409 poll_final", arguments: Backend.allCases)
    func voteToFinal(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await withPolls(backend, clock: clock) { instances, db, apns in
            let stack = instances[0]
            try await stack.registerPushToStart(["u1", "u2", "u3"])
            let poll = try await stack.polls.create(try PollInput.parseCreate(createBody(members: 3), now: t))
            let activityID = try #require(poll.liveActivityID)
            #expect(try await stack.worker.runDueJobs() >= 1, "the activity's push-to-starts")
            #expect(Self.events(apns).filter { $0 == "start" }.count == 3)
            let activity = try #require(try await stack.activities.store.activity(activityID))
            #expect(activity.channelID != nil, "a channel of its own")
            #expect(activity.request.audience == .users(["u1", "u2", "u3"]))
            #expect(
                try await stack.activities.upcoming(userID: "u2", app: PollInstance.topic).map(\.id) == [activityID],
                "a member's upcoming list shows the poll's activity"
            )

            var voted = try await stack.polls.vote(poll.id, userID: "u1", app: nil, option: "accept")
            voted = try await stack.polls.vote(poll.id, userID: "u2", app: PollInstance.topic, option: "accept")
            voted = try await stack.polls.vote(poll.id, userID: "u2", app: nil, option: "decline")
            #expect(voted.tally.options.map(\.count) == [1, 1])
            #expect(voted.tally.options.map(\.names) == [["Name 1"], ["Name 2"]])
            #expect(!voted.isFinal)

            let unknown = await #expect(throws: PollError.self) {
                try await stack.polls.vote(poll.id, userID: "u3", app: nil, option: "maybe")
            }
            #expect(unknown?.field == "option")
            #expect(unknown?.kind == .unprocessable)

            let final = try await stack.polls.vote(poll.id, userID: "u3", app: nil, option: "accept")
            #expect(final.isFinal)
            #expect(final.tally.options.map(\.names) == [["Name 1", "Name 3"], ["Name 2"]])
            let again = await #expect(throws: PollError.self) {
                try await stack.polls.vote(poll.id, userID: "u1", app: nil, option: "decline")
            }
            #expect(again?.code == "poll_final")
            #expect(again?.kind == .conflict)

            _ = try await stack.worker.runDueJobs()
            let rows = try await RowPollEvents.rows(db)
            #expect(rows.count == 1)
            #expect(rows.first?.reason == "all_voted")
            #expect(rows.first?.result == "accept=Name 1,Name 3;decline=Name 2")
            #expect(try await stack.activities.store.activity(activityID)?.state == .ended)
            #expect(stack.activityEvents.all.filter { $0.kind == .ended(.pollFinal) }.count == 1)
            let finals = Self.broadcastPolls(apns).filter { $0["final"] == JSONValue.bool(true) }
            #expect(finals.count == 1, "the end carries the final tally")
            #expect(finals.first?["voted"] == JSONValue.integer(3))
            #expect(Self.events(apns).filter { $0 == "end" }.count == 1)
            #expect(
                Self.broadcastPolls(apns).contains { $0["final"] == JSONValue.bool(false) && $0["voted"] == 2 },
                "a vote's tally is broadcast"
            )
        }
    }

    @Test("a non-member, another app's token or an unknown id: the same 404", arguments: Backend.allCases)
    func notFound(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await withPolls(backend, clock: clock) { instances, _, _ in
            let stack = instances[0]
            let poll = try await stack.polls.create(
                try PollInput.parseCreate(createBody(members: 2, liveActivity: false), now: t)
            )
            var errors: [PollError?] = []
            errors.append(
                await #expect(throws: PollError.self) {
                    try await stack.polls.vote(poll.id, userID: "stranger", app: nil, option: "accept")
                }
            )
            errors.append(
                await #expect(throws: PollError.self) {
                    try await stack.polls.vote(poll.id, userID: "u1", app: "com.other.app", option: "accept")
                }
            )
            errors.append(
                await #expect(throws: PollError.self) {
                    try await stack.polls.vote(UUID(), userID: "u1", app: nil, option: "accept")
                }
            )
            errors.append(
                await #expect(throws: PollError.self) {
                    try await stack.polls.read(poll.id, userID: "stranger", app: nil)
                }
            )
            for error in errors { #expect(error == PollError.notFound) }
            #expect(try await stack.polls.read(poll.id, userID: "u2", app: PollInstance.topic).id == poll.id)
        }
    }

    @Test("the host finalizes early, another member may not; the API key finalizes", arguments: Backend.allCases)
    func finalizeEarly(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await withPolls(backend, clock: clock) { instances, db, _ in
            let stack = instances[0]
            let body = createBody(members: 3, host: "u2", liveActivity: false)
            let first = try await stack.polls.create(try PollInput.parseCreate(body, now: t))
            _ = try await stack.polls.vote(first.id, userID: "u1", app: nil, option: "decline")
            let notHost = await #expect(throws: PollError.self) {
                try await stack.polls.finalize(first.id, reason: .host, hostUserID: "u1", app: nil)
            }
            #expect(notHost?.code == "not_host")
            let hidden = await #expect(throws: PollError.self) {
                try await stack.polls.finalize(first.id, reason: .host, hostUserID: "stranger", app: nil)
            }
            #expect(hidden == PollError.notFound)
            let byHost = try await stack.polls.finalize(first.id, reason: .host, hostUserID: "u2", app: nil)
            #expect(byHost.isFinal)
            #expect(byHost.tally.voted == 1)
            let twice = await #expect(throws: PollError.self) {
                try await stack.polls.finalize(first.id, reason: .api)
            }
            #expect(twice?.code == "poll_final")

            let second = try await stack.polls.create(try PollInput.parseCreate(body, now: t))
            #expect(try await stack.polls.finalize(second.id, reason: .api).isFinal)
            let reasons = try await RowPollEvents.rows(db).map(\.reason).sorted()
            #expect(reasons == ["api", "host"])
        }
    }

    @Test("closes_at finalizes through the poll.close job", arguments: Backend.allCases)
    func closesAt(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await withPolls(backend, clock: clock) { instances, db, _ in
            let stack = instances[0]
            let closesAt = EpochTime.seconds(t) + 600
            let poll = try await stack.polls.create(
                try PollInput.parseCreate(createBody(members: 2, closesAt: closesAt, liveActivity: false), now: t)
            )
            _ = try await stack.polls.vote(poll.id, userID: "u1", app: nil, option: "accept")
            #expect(try await stack.worker.runDueJobs() == 0, "not due yet")
            #expect(try await stack.polls.read(poll.id).isFinal == false)
            clock.advance(601)
            #expect(try await stack.worker.runDueJobs() == 1)
            let closed = try await stack.polls.read(poll.id)
            #expect(closed.isFinal)
            #expect(closed.finalizedAt == Date(timeIntervalSince1970: TimeInterval(closesAt + 1)))
            #expect(try await RowPollEvents.rows(db).map(\.reason) == ["closes_at"])
        }
    }

    @Test(
        "50 members' last votes at once across two instances: one final, one event, one end",
        arguments: Backend.allCases
    )
    func concurrentLastVotes(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await withPolls(backend, clock: clock, instances: 2) { instances, db, apns in
            let users = (1...50).map { "u\($0)" }
            try await instances[0].registerPushToStart(users)
            let poll = try await instances[0].polls.create(try PollInput.parseCreate(createBody(members: 50), now: t))
            _ = try await instances[0].worker.runDueJobs()
            #expect(
                try await instances[0].activities.store.activity(try #require(poll.liveActivityID))?.state == .started
            )

            let finalVotes = try await withThrowingTaskGroup(of: Bool.self) { group in
                for (index, user) in users.enumerated() {
                    let polls = instances[index % 2].polls
                    group.addTask {
                        try await polls.vote(
                            poll.id,
                            userID: user,
                            app: nil,
                            option: index % 3 == 0 ? "decline" : "accept"
                        )
                        .isFinal
                    }
                }
                var finals = 0
                for try await final in group where final { finals += 1 }
                return finals
            }
            #expect(finalVotes == 1, "only the vote that made it final sees it final")
            let finalizedAt = try await db.query("SELECT finalized_at FROM polls WHERE finalized_at IS NOT NULL")
            #expect(finalizedAt.count == 1)
            #expect(try await RowPollEvents.rows(db).count == 1)
            let endJobs = try await db.query("SELECT id FROM jobs WHERE kind = $1", [.text(PollJobKind.end)])
            #expect(endJobs.count == 1)
            _ = try await instances[0].worker.runDueJobs()
            _ = try await instances[1].worker.runDueJobs()
            let ended = instances.flatMap { $0.activityEvents.all }.filter { $0.kind == .ended(.pollFinal) }
            #expect(ended.count == 1)
            #expect(Self.events(apns).filter { $0 == "end" }.count == 1)
            let finals = Self.broadcastPolls(apns).filter { $0["final"] == JSONValue.bool(true) }
            #expect(finals.count == 1, "one final broadcast")
            #expect(finals.first?["voted"] == JSONValue.integer(50))
        }
    }

    @Test("GET /v1/polls pages newest first with next_cursor", arguments: Backend.allCases)
    func list(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await withPolls(backend, clock: clock) { instances, _, _ in
            let stack = instances[0]
            var ids: [UUID] = []
            for _ in 0..<5 {
                ids.append(
                    try await stack.polls.create(
                        try PollInput.parseCreate(createBody(members: 2, liveActivity: false), now: clock.now())
                    ).id
                )
                clock.advance(1)
            }
            var seen: [UUID] = []
            var cursor: String?
            repeat {
                let page = try await stack.polls.list(limit: 2, cursor: cursor)
                seen += page.items.map(\.id)
                cursor = page.next
            } while cursor != nil
            #expect(seen == ids.reversed())
        }
    }
}

extension PollServiceTests {
    @Test("final polls are deleted after the retention, open ones kept", arguments: Backend.allCases)
    func retention(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await withPolls(backend, clock: clock) { instances, db, _ in
            let stack = instances[0]
            let body = createBody(members: 2, liveActivity: false)
            let final = try await stack.polls.create(try PollInput.parseCreate(body, now: t))
            let open = try await stack.polls.create(try PollInput.parseCreate(body, now: t))
            _ = try await stack.polls.finalize(final.id, reason: .api)
            #expect(try await stack.polls.store.deleteFinal(before: t) == 0, "final at t, not before")
            #expect(try await stack.polls.store.deleteFinal(before: t.addingTimeInterval(1)) == 1)
            #expect(try await stack.polls.store.poll(final.id) == nil)
            #expect(try await stack.polls.store.poll(open.id) != nil)
            let members = try await db.query(
                "SELECT user_id FROM poll_members WHERE poll_id = $1",
                [SQLValue(final.id)]
            )
            #expect(members.isEmpty)
        }
    }
}

extension PollServiceTests {
    @Test("a large group's names are cut to what fits in a push; the counts stay whole")
    func largeGroupFits() throws {
        let members = (1...500).map {
            PollMember(userID: "u\($0)", name: String(repeating: "n", count: 90), option: "a")
        }
        let poll = Poll(
            id: UUID(),
            app: "com.example.app",
            environment: .production,
            question: "q",
            options: ["a", "b"],
            members: members,
            hostUserID: nil,
            closesAt: nil,
            liveActivityID: nil,
            contentState: .object(["emoji": "🍝"]),
            createdAt: t,
            finalizedAt: nil
        )
        let state = PollService.contentState(of: poll)
        #expect(try state.encodedPayload().count <= PollService.maximumContentStateBytes)
        let tally = try #require(state.objectValue?["poll"]?.objectValue)
        guard case .array(let options)? = tally["options"], case .array(let names)? = options.first?["names"] else {
            Issue.record("no options in \(state)")
            return
        }
        #expect(options.first?["count"] == 500)
        #expect(!names.isEmpty && names.count < 500)
        #expect(state.objectValue?["emoji"] == "🍝")

        var small = poll
        small.members = Array(members.prefix(3))
        let whole = PollService.contentState(of: small)
        #expect(whole.objectValue?["poll"] == small.tally.json, "a small group's names all fit")
    }
}

extension PollServiceTests {
    @Test("a poll final before its activity started leaves no activity running", arguments: Backend.allCases)
    func finalBeforeStart(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await withPolls(backend, clock: clock) { instances, _, _ in
            let stack = instances[0]
            try await stack.registerPushToStart(["u1", "u2"])
            let poll = try await stack.polls.create(try PollInput.parseCreate(createBody(members: 2), now: t))
            let activityID = try #require(poll.liveActivityID)
            #expect(try await stack.activities.store.activity(activityID)?.state == .scheduled)
            _ = try await stack.polls.finalize(poll.id, reason: .api)
            // The start and the end may meet (the end then tries again after its backoff).
            for _ in 0..<3 {
                _ = try await stack.worker.runDueJobs()
                clock.advance(600)
            }
            let state = try await stack.activities.store.activity(activityID)?.state
            #expect(state == .ended || state == .cancelled, "ended, or cancelled before its start")
            let ends = try await stack.queue.list(kind: PollJobKind.end)
            #expect(ends.count == 1)
            #expect(ends.allSatisfy { $0.status == .done })
        }
    }
}

/// The open polls `GET /v1/client/upcoming` lists with a member's activities.
@Suite("Polls: open polls in a member's upcoming list")
struct PollUpcomingTests {
    let t = Date(timeIntervalSince1970: 1_790_000_000)

    @Test(
        "a member's open polls, soonest closing first, with the member's vote; not final ones, not others'",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func upcoming(backend: Backend) async throws {
        try await withPolls(backend, clock: ManualClock(t)) { instances, _, _ in
            let stack = instances[0]
            let later = try await stack.polls.create(
                try PollInput.parseCreate(
                    createBody(closesAt: Int64(t.timeIntervalSince1970) + 7_200, liveActivity: false),
                    now: t
                )
            )
            let sooner = try await stack.polls.create(
                try PollInput.parseCreate(
                    createBody(closesAt: Int64(t.timeIntervalSince1970) + 600, liveActivity: false),
                    now: t
                )
            )
            let final = try await stack.polls.create(try PollInput.parseCreate(createBody(liveActivity: false), now: t))
            _ = try await stack.polls.vote(sooner.id, userID: "u2", app: nil, option: "decline")
            _ = try await stack.polls.finalize(final.id, reason: .api)

            let source = PollUpcoming(store: stack.polls.store)
            #expect(source.kind == "poll")
            let listed = try await source.upcoming(userID: "u2", app: nil, limit: 50)
            let items = listed.map(\.body)
            #expect(
                items.map { $0["id"] } == [sooner.id, later.id].map { .string(RequestIdentifier.lowercaseString($0)) }
            )
            #expect(listed.map(\.at) == [t.addingTimeInterval(600), t.addingTimeInterval(7_200)], "at is closes_at")
            #expect(items.first?["my_option"] == "decline")
            #expect(items.first?["voted"] == .integer(1))
            #expect(items.last?["my_option"] == .null)
            #expect(try await source.upcoming(userID: "u2", app: nil, limit: 1).count == 1)
            #expect(try await source.upcoming(userID: "u9", app: nil, limit: 50).isEmpty, "not a member")
            #expect(
                try await source.upcoming(userID: "u2", app: "com.example.other", limit: 50).isEmpty,
                "another app"
            )
        }
    }
}
