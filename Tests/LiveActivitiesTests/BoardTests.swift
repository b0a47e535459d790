import APNs
import APNsTestSupport
import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import Synchronization
import Testing

@testable import Boards
@testable import LiveActivities

/// Live boards with a manual clock and the in-memory APNs: members' ETAs merged in memory and
/// broadcast at most once per interval, the first arrival's alert once, the end once everyone
/// arrived, the nudge only to members who posted nothing.
@Suite("Boards: coalesced broadcasts, arrivals, the end and the nudge")
struct BoardTests {
    let t = Date(timeIntervalSince1970: 1_790_000_000)
    static let members = [("ann", "Ann"), ("bob", "Bob"), ("cat", "Cat")].map {
        LiveActivityMember(userID: $0.0, name: $0.1)
    }

    /// The board stack: the harness, with the boards' hub and jobs on its queue.
    struct Stack {
        let live: LiveActivityHarness
        let hub: BoardHub
        /// A second instance's hub on the same database (shares the board on PostgreSQL).
        let other: BoardHub
        let nudger: RecordingNudger
        let service: LiveActivityService

        var broadcasts: [RecordedAPNSRequest] { live.apns.requests.filter { $0.path.hasPrefix("/4/broadcasts/") } }

        /// The broadcast with the latest timestamp: send jobs run concurrently, so the last sent
        /// need not be the last accepted.
        var latest: RecordedAPNSRequest? {
            broadcasts.max { BoardTests.timestamp($0) < BoardTests.timestamp($1) }
        }

        /// Creates a started board (the app starts it) for the three members.
        func board(_ options: LiveActivityBoardOptions) async throws -> LiveActivity {
            var request = LiveActivityHarness.request(channel: .create(storagePolicy: 0))
            request.start = .app
            request.members = BoardTests.members
            request.audience = .users(BoardTests.members.map(\.userID))
            request.board = options
            return try await service.create(request).0
        }

        /// Runs the broadcasts due now and their send jobs.
        func flush() async throws {
            await hub.settle()
            await other.settle()
            _ = try await live.worker.runDueJobs()
        }
    }

    func withStack(_ backend: Backend, clock: ManualClock, _ body: (Stack) async throws -> Void) async throws {
        let attached = AttachedJobQueue()
        let nudger = RecordingNudger()
        let built = Mutex<[BoardHub]>([])
        try await LiveActivityHarness.inMemory(
            backend,
            clock: clock,
            retryPolicy: .never,
            handlers: { jobs, handlers in
                let hubs = (0..<2).map { _ in
                    BoardHub(
                        store: BoardStore(database: jobs.store.database),
                        jobs: jobs,
                        queue: attached,
                        clock: clock,
                        interval: 1,
                        metrics: MetricsRegistry()
                    )
                }
                built.withLock { $0 = hubs }
                BoardJobs(hub: hubs[0], nudger: nudger).register(on: &handlers)
            }
        ) { live in
            attached.attach(live.queue)
            var service = live.service
            service.creationHook = BoardCreationHook(store: BoardStore(database: live.store.database), clock: clock)
            let hubs = built.withLock { $0 }
            try await body(Stack(live: live, hub: hubs[0], other: hubs[1], nudger: nudger, service: service))
        }
    }

    static func timestamp(_ request: RecordedAPNSRequest) -> Int64 {
        guard case .integer(let value)? = request.payload?["aps"]?["timestamp"] else { return 0 }
        return value
    }

    static func board(_ request: RecordedAPNSRequest) -> JSONValue? {
        request.payload?["aps"]?["content-state"]?["board"]
    }

    static func eta(_ board: JSONValue?, _ user: String) -> JSONValue? {
        guard case .array(let members)? = board?["members"] else { return nil }
        return members.first { $0["user_id"] == .string(user) }?["eta_minutes"]
    }

    @Test(
        "posts between two broadcasts go as one, with the latest board; a post that changes nothing sends none",
        arguments: Backend.allCases
    )
    func coalescing(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await withStack(backend, clock: clock) { stack in
            let activity = try await stack.board(LiveActivityBoardOptions())
            let first = try JSONValue.parse(try await stack.hub.post(20, to: activity.id, by: "ann", app: nil))
            #expect(first["arrived"] == .integer(0))
            #expect(first["total"] == .integer(3))
            #expect(Self.eta(first, "ann") == .integer(20))
            try await stack.flush()
            #expect(stack.broadcasts.count == 1, "the first change goes at once")

            // Within the interval: merged, not sent.
            for (eta, user) in [(18, "ann"), (30, "bob"), (15, "ann"), (25, "bob")] {
                _ = try await stack.hub.post(eta, to: activity.id, by: user, app: nil)
            }
            _ = try await stack.live.worker.runDueJobs()
            #expect(stack.broadcasts.count == 1, "nothing more within the interval")
            clock.advance(1)
            try await stack.flush()
            #expect(stack.broadcasts.count == 2, "one broadcast for four posts")
            let latest = Self.board(try #require(stack.latest))
            #expect(Self.eta(latest, "ann") == .integer(15))
            #expect(Self.eta(latest, "bob") == .integer(25))
            #expect(Self.eta(latest, "cat") == .null)
            #expect(
                stack.latest?.payload?["aps"]?["content-state"]?["step"] == .integer(1),
                "the activity's own content state stays"
            )

            // The same ETA again changes nothing: nothing is sent.
            _ = try await stack.hub.post(25, to: activity.id, by: "bob", app: nil)
            clock.advance(5)
            try await stack.flush()
            #expect(stack.broadcasts.count == 2)

            let timestamps = stack.broadcasts.compactMap { request -> Int64? in
                guard case .integer(let value)? = request.payload?["aps"]?["timestamp"] else { return nil }
                return value
            }
            #expect(timestamps.count == 2 && timestamps[0] < timestamps[1], "\(timestamps)")
        }
    }

    @Test(
        "the first arrival's alert goes once; when everyone arrived the end is due once, end_when_all_arrived later",
        arguments: Backend.allCases
    )
    func arrivals(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await withStack(backend, clock: clock) { stack in
            let activity = try await stack.board(
                LiveActivityBoardOptions(
                    arrivalAlert: LiveActivityAlert(title: "Meetup", body: "{name} has arrived"),
                    endWhenAllArrived: 300
                )
            )
            _ = try await stack.hub.post(0, to: activity.id, by: "bob", app: nil)
            try await stack.flush()
            let alerted = try #require(stack.latest)
            #expect(alerted.payload?["aps"]?["alert"]?["body"] == "Bob has arrived")
            #expect(Self.board(alerted)?["arrived"] == .integer(1))

            for user in ["ann", "cat"] {
                clock.advance(1)
                _ = try await stack.hub.post(0, to: activity.id, by: user, app: nil)
                try await stack.flush()
            }
            #expect(stack.broadcasts.count == 3)
            #expect(stack.broadcasts.dropFirst().allSatisfy { $0.payload?["aps"]?["alert"] == nil }, "one alert")
            #expect(Self.board(try #require(stack.latest))?["arrived"] == .integer(3))
            // An arrival is final: an ETA after it changes nothing.
            _ = try await stack.hub.post(10, to: activity.id, by: "ann", app: nil)
            #expect(try await stack.live.store.activity(activity.id)?.state == .started)

            clock.advance(299)
            _ = try await stack.live.worker.runDueJobs()
            #expect(try await stack.live.store.activity(activity.id)?.state == .started, "not before 5 minutes")
            clock.advance(1)
            try await stack.flush()
            #expect(try await stack.live.store.activity(activity.id)?.state == .ended)
            let ends = stack.live.events.all.filter { $0.kind == .ended(.allArrived) }
            #expect(ends.count == 1)
            #expect(stack.latest?.payload?["aps"]?["event"] == "end")
            #expect(Self.board(try #require(stack.latest))?["arrived"] == .integer(3), "the end carries the board")
            await #expect(throws: LiveActivityError.self) {
                _ = try await stack.hub.post(5, to: activity.id, by: "ann", app: nil)
            }
        }
    }

    @Test("an end due before the last arrivals were broadcast carries them", arguments: Backend.allCases)
    func endCarriesTheLatest(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await withStack(backend, clock: clock) { stack in
            let activity = try await stack.board(LiveActivityBoardOptions(endWhenAllArrived: 0))
            for user in ["ann", "bob", "cat"] { _ = try await stack.hub.post(0, to: activity.id, by: user, app: nil) }
            // Only the first arrival's broadcast went; the end job is due at once.
            await stack.hub.settle()
            _ = try await stack.live.worker.runDueJobs()
            _ = try await stack.live.worker.runDueJobs()
            #expect(try await stack.live.store.activity(activity.id)?.state == .ended)
            let end = try #require(stack.broadcasts.first { $0.payload?["aps"]?["event"] == "end" })
            #expect(Self.board(end)?["arrived"] == .integer(3))
        }
    }

    @Test("two instances on one PostgreSQL: posts to either are in the next broadcast, one per interval overall")
    func twoInstances() async throws {
        let clock = ManualClock(t)
        try await withStack(.postgres, clock: clock) { stack in
            let activity = try await stack.board(
                LiveActivityBoardOptions(arrivalAlert: LiveActivityAlert(title: "Meetup", body: "{name} has arrived"))
            )
            _ = try await stack.hub.post(20, to: activity.id, by: "ann", app: nil)
            let seen = try JSONValue.parse(try await stack.other.post(30, to: activity.id, by: "bob", app: nil))
            #expect(Self.eta(seen, "ann") == .integer(20), "each instance answers the shared board")
            try await stack.flush()
            #expect(stack.broadcasts.count == 1)
            for second in 1...3 {
                _ = try await stack.hub.post(20 - second, to: activity.id, by: "ann", app: nil)
                _ = try await stack.other.post(30 - second, to: activity.id, by: "bob", app: nil)
                try await stack.flush()
                #expect(stack.broadcasts.count == second, "nothing before the interval passed")
                clock.advance(1)
                try await stack.flush()
                #expect(stack.broadcasts.count == second + 1, "one broadcast per interval, from either instance")
                let board = Self.board(try #require(stack.latest))
                #expect(Self.eta(board, "ann") == .integer(Int64(20 - second)))
                #expect(Self.eta(board, "bob") == .integer(Int64(30 - second)))
            }
            // Both arrive on different instances: one alert, for the first.
            clock.advance(1)
            _ = try await stack.other.post(0, to: activity.id, by: "bob", app: nil)
            _ = try await stack.hub.post(0, to: activity.id, by: "ann", app: nil)
            clock.advance(1)
            try await stack.flush()
            let alerts = stack.broadcasts.compactMap { $0.payload?["aps"]?["alert"]?["body"] }
            #expect(alerts == ["Bob has arrived"])
            #expect(Self.board(try #require(stack.latest))?["arrived"] == .integer(2))
        }
    }

    @Test("nudge.after the start, only the members who posted nothing are nudged, once", arguments: Backend.allCases)
    func nudge(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await withStack(backend, clock: clock) { stack in
            let alert = LiveActivityAlert(title: "Meetup", body: "Share your ETA")
            let activity = try await stack.board(
                LiveActivityBoardOptions(nudge: LiveActivityBoardOptions.Nudge(after: 900, alert: alert))
            )
            _ = try await stack.hub.post(12, to: activity.id, by: "cat", app: nil)
            try await stack.flush()
            clock.advance(899)
            _ = try await stack.live.worker.runDueJobs()
            #expect(stack.nudger.nudges.isEmpty)
            clock.advance(1)
            _ = try await stack.live.worker.runDueJobs()
            #expect(stack.nudger.nudges.map(\.users) == [["ann", "bob"]])
            #expect(stack.nudger.nudges.first?.alert == alert)
            clock.advance(3_600)
            _ = try await stack.live.worker.runDueJobs()
            #expect(stack.nudger.nudges.count == 1, "once")
        }
    }

    @Test("a member's token reaches only its own boards: another activity, a non-member, another app are unknown")
    func hostile() async throws {
        let clock = ManualClock(t)
        try await withStack(.sqliteMemory, clock: clock) { stack in
            let board = try await stack.board(LiveActivityBoardOptions())
            var plain = LiveActivityHarness.request(channel: nil)
            plain.start = .app
            plain.audience = .users(["ann"])
            let other = try await stack.service.create(plain).0
            for (id, user, app) in [
                (board.id, "mallory", nil), (other.id, "ann", nil), (UUID(), "ann", nil),
                (board.id, "ann", "com.example.other"),
            ] as [(UUID, String, String?)] {
                do {
                    _ = try await stack.hub.post(5, to: id, by: user, app: app)
                    Issue.record("\(user) posted to \(id)")
                } catch let error as LiveActivityError {
                    #expect(error.code == "not_found", "\(user) → \(id): \(error)")
                }
            }
            #expect(stack.broadcasts.isEmpty)
        }
    }

    @Test("the answer's JSON text is the board as JSONValue reads it, names escaped")
    func written() throws {
        var state = BoardState(members: [
            LiveActivityMember(userID: "u\"1", name: "Ann \"A\" Ünal\n"), LiveActivityMember(userID: "u2", name: "Bo"),
        ])
        _ = state.post(0, by: "u\"1", at: t)
        let read = try JSONValue.parse(state.jsonBytes())
        guard case .array(let members)? = read["members"], members.count == 2 else {
            Issue.record("no members in \(read)")
            return
        }
        #expect(members[0]["name"] == .string("Ann \"A\" Ünal\n"))
        #expect(members[0]["updated_at"] == .integer(Int64(t.timeIntervalSince1970)))
        #expect(members[1]["eta_minutes"] == .null)
        #expect(read["arrived"] == .integer(1))
        #expect(try read.jsonBytes() == state.jsonBytes(), "the same text JSONValue writes")
    }

    @Test("a large board is cut to fit a push: arrived first, then the nearest, with shown")
    func fits() throws {
        var state = BoardState(
            members: (0..<500).map { LiveActivityMember(userID: "user-\($0)", name: "Member number \($0)") }
        )
        for index in 0..<500 { _ = state.post(index % 7 == 0 ? 0 : index % 60 + 1, by: "user-\(index)", at: t) }
        let content = BoardHub.contentState(.object(["step": .integer(1)]), board: state.json, alert: nil)
        let size = try content.encodedPayload().count
        #expect(size <= 3_300)
        #expect(content["board"]?["total"] == .integer(500))
        guard case .integer(let shown)? = content["board"]?["shown"],
            case .array(let members)? = content["board"]?["members"]
        else {
            Issue.record("no shown count")
            return
        }
        #expect(Int(shown) == members.count && shown > 10)
        #expect(members.first?["arrived"] == .bool(true))
    }
}

/// Every limit of a board's create body and of a post is a 4xx naming the field.
@Suite("Boards: limits")
struct BoardLimitTests {
    static let twoMembers = #"[{"user_id": "ann", "name": "Ann"}, {"user_id": "bob", "name": "Bob"}]"#

    /// A create body with `members` and `board` as given (JSON text; `nil` leaves it out).
    static func body(members: String? = twoMembers, board: String? = #"{"end_when_all_arrived": "5m"}"#) -> [UInt8] {
        var fields = [
            #""attributes_type": "MeetupAttributes""#, #""content_state": {"place": "Café"}"#,
            #""alert": {"title": "Meetup", "body": "Starting"}"#,
        ]
        if let members { fields.append(#""members": "# + members) }
        if let board { fields.append(#""board": "# + board) }
        return Array(("{" + fields.joined(separator: ", ") + "}").utf8)
    }

    @Test("a board implies its members' audience and a channel of its own")
    func defaults() throws {
        let request = try LiveActivityInput.parseCreate(Self.body(), now: Date())
        #expect(request.audience == .users(["ann", "bob"]))
        #expect(request.channel == .create(storagePolicy: 0))
        #expect(request.board?.endWhenAllArrived == 300)
        #expect(request.members?.map(\.name) == ["Ann", "Bob"])
    }

    static let many = "[" + (0..<501).map { #"{"user_id": "u\#($0)", "name": "U"}"# }.joined(separator: ", ") + "]"
    static let longName = String(repeating: "a", count: 65)

    @Test(
        "each limit names its field",
        arguments: [
            ("members", body(members: #"[{"user_id": "ann", "name": "Ann"}]"#)),
            ("members", body(members: #""ann""#)),
            ("members", body(members: many)),
            ("members", body(members: nil)),
            (
                "members[1].user_id",
                body(members: #"[{"user_id": "ann", "name": "A"}, {"user_id": "ann", "name": "B"}]"#)
            ),
            ("members[0].user_id", body(members: #"[{"user_id": "", "name": "A"}, {"user_id": "b", "name": "B"}]"#)),
            (
                "members[0].name",
                body(members: #"[{"user_id": "a", "name": "\#(longName)"}, {"user_id": "b", "name": "B"}]"#)
            ),
            (
                "members[0].color",
                body(members: #"[{"user_id": "a", "name": "A", "color": 1}, {"user_id": "b", "name": "B"}]"#)
            ),
            ("board.end_when_all_arrived", body(board: #"{"end_when_all_arrived": "9h"}"#)),
            ("board.end_when_all_arrived", body(board: #"{"end_when_all_arrived": 300}"#)),
            ("board.nudge.after", body(board: #"{"nudge": {"alert": {"title": "a", "body": "b"}}}"#)),
            ("board.nudge.alert", body(board: #"{"nudge": {"after": "15m"}}"#)),
            ("board.arrival_alert.body", body(board: #"{"arrival_alert": {"title": "a"}}"#)),
            ("board.colour", body(board: #"{"colour": "red"}"#)),
        ]
    )
    func limits(field: String, body: [UInt8]) throws {
        do {
            _ = try LiveActivityInput.parseCreate(body, now: Date())
            Issue.record("accepted a body that breaks \(field)")
        } catch {
            #expect(error.field == field, "\(error)")
            #expect(error.kind == .invalid || error.kind == .tooLarge)
        }
    }

    @Test("a post takes eta_minutes from 0 to 1440 and nothing else")
    func post() throws {
        #expect(try BoardRoutes.parse(Array(#"{"eta_minutes": 0}"#.utf8)) == 0)
        #expect(try BoardRoutes.parse(Array(#"{"eta_minutes": 1440}"#.utf8)) == 1_440)
        for (body, field) in [
            (#"{"eta_minutes": 1441}"#, "eta_minutes"), (#"{"eta_minutes": -1}"#, "eta_minutes"),
            (#"{"eta_minutes": "5"}"#, "eta_minutes"), (#"{}"#, "eta_minutes"),
            (#"{"eta_minutes": 5, "eta": 5}"#, "eta"),
        ] {
            do {
                _ = try BoardRoutes.parse(Array(body.utf8))
                Issue.record("accepted \(body)")
            } catch {
                #expect(error.field == field, "\(body): \(error)")
            }
        }
    }
}

/// The nudges a board sent, instead of notifications.
final class RecordingNudger: BoardNudger {
    struct Nudge: Sendable {
        var users: [String]
        var alert: LiveActivityAlert
    }

    private let sent = Mutex<[Nudge]>([])
    var nudges: [Nudge] { sent.withLock { $0 } }

    func nudge(_ activity: LiveActivity, users: [String], alert: LiveActivityAlert) async throws {
        sent.withLock { $0.append(Nudge(users: users, alert: alert)) }
    }
}
