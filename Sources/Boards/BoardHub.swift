public import APNs
public import Foundation
public import HeraldCore
public import Jobs
public import LiveActivities
import Synchronization

/// The live boards of this instance: members' posts merged in memory (``BoardState``) and
/// broadcast on the activity's channel at most once per interval, each broadcast carrying the
/// latest board. A post writes nothing to the database, except a member's first post and
/// arrival (few), which make the nudge and the first-arrival alert and the all-arrived end happen
/// once.
///
/// A broadcast is an update accepted by ``LiveActivityAcceptor``: stamped strictly after the
/// activity's other updates and sent by its durable `live_activity.send` job.
public final class BoardHub: Sendable {
    let store: BoardStore
    let jobs: LiveActivityJobs
    let queue: AttachedJobQueue
    let clock: any HeraldClock
    /// The least time between two broadcasts of one board.
    public let interval: TimeInterval
    let metrics: BoardMetrics
    let logger: Logger

    private struct Entry {
        var state: BoardState
        var activity: LiveActivity
    }

    private let boards = Mutex<[UUID: Entry]>([:])
    /// Broadcasts waiting for their time, to be awaited by tests and shutdown.
    private let flushes = Mutex<[UUID: Task<Void, Never>]>([:])

    public init(
        store: BoardStore,
        jobs: LiveActivityJobs,
        queue: AttachedJobQueue,
        clock: any HeraldClock,
        interval: TimeInterval = 1,
        metrics: MetricsRegistry = .shared,
        logger: Logger = Logger(label: "herald.boards")
    ) {
        self.store = store
        self.jobs = jobs
        self.queue = queue
        self.clock = clock
        self.interval = max(1, interval)
        self.metrics = BoardMetrics(registry: metrics)
        self.logger = logger
    }

    /// Merges `userID`'s ETA into the board of activity `id` and returns the merged board. A
    /// change is broadcast at once, or one interval after the previous broadcast.
    ///
    /// - Parameter permitted: the client token's `app` claim, if any.
    /// - Throws: ``LiveActivityError`` not found for an unknown activity, one without a board, of
    ///   another app, or of which the user is not a member (alike); conflict when it is not
    ///   running.
    public func post(
        _ etaMinutes: Int,
        to id: UUID,
        by userID: String,
        app permitted: String?
    ) async throws
        -> APNSJSONValue
    {
        let entry = try await load(id)
        guard permitted == nil || permitted == entry.activity.app, entry.state.isMember(userID) else {
            throw LiveActivityError.notFound
        }
        let now = clock.now()
        let (outcome, members) = boards.withLock { boards -> (BoardState.PostOutcome, Int) in
            guard var entry = boards[id] else { return (.notAMember, 0) }
            defer { boards[id] = entry }
            return (entry.state.post(etaMinutes, by: userID, at: now), entry.state.members.count)
        }
        metrics.posts.increment(labels: [("result", outcome.label)])
        if case .changed(let firstPost, let arrived) = outcome, arrived || firstPost {
            try await persist(userID, of: entry.activity, arrived: arrived, members: members, at: now)
        } else if outcome.isFirstPost {
            try await persist(userID, of: entry.activity, arrived: false, members: members, at: now)
        }
        scheduleBroadcast(id)
        return boards.withLock { $0[id]?.state.json } ?? entry.state.json
    }

    /// Records a first post or an arrival; the first arrival queues its alert for the next
    /// broadcast, the last schedules the end.
    private func persist(
        _ userID: String,
        of activity: LiveActivity,
        arrived: Bool,
        members: Int,
        at now: Date
    )
        async throws
    {
        let options = activity.request.board
        let queue = try attachedQueue
        let recorded = try await store.record(userID, of: activity.id, arrived: arrived, members: members, at: now) {
            recorded,
            tx in
            if recorded.allArrived, let delay = options?.endWhenAllArrived {
                _ = try await queue.enqueue(
                    BoardJobKind.endJob(activity.id, at: now.addingTimeInterval(TimeInterval(delay))),
                    on: tx
                )
            }
        }
        if recorded.allArrived { queue.wake() }
        if recorded.firstArrival, let template = options?.arrivalAlert {
            let name = activity.request.members?.first { $0.userID == userID }?.name ?? userID
            let alert = LiveActivityAlert(
                title: template.title.replacingOccurrences(of: "{name}", with: name),
                body: template.body.replacingOccurrences(of: "{name}", with: name)
            )
            boards.withLock { $0[activity.id]?.state.pendingAlert = alert }
        }
    }

    /// The board of `id` in memory, loaded from the activity and its persisted members.
    private func load(_ id: UUID) async throws -> Entry {
        if let entry = boards.withLock({ $0[id] }) { return entry }
        guard let activity = try await jobs.store.activity(id), let members = activity.request.members,
            activity.request.board != nil
        else { throw LiveActivityError.notFound }
        guard activity.state == .started else { throw LiveActivityError.notStarted(activity.state) }
        let (posted, arrived) = try await store.members(of: id)
        let loaded = Entry(state: BoardState(members: members, posted: posted, arrived: arrived), activity: activity)
        return boards.withLock { boards in
            if let existing = boards[id] { return existing }
            boards[id] = loaded
            return loaded
        }
    }

    /// Starts the broadcast task of `id` if a change waits and none is scheduled.
    private func scheduleBroadcast(_ id: UUID) {
        let now = clock.now()
        guard let due = boards.withLock({ $0[id]?.state.scheduleBroadcast(now: now, interval: interval) }) else {
            return
        }
        let task = Task { [self] in
            if due > now { try? await clock.sleep(until: due) }
            await broadcast(id)
        }
        flushes.withLock { $0[id] = task }
    }

    /// Broadcasts the latest board of `id`, with the arrival alert once.
    private func broadcast(_ id: UUID) async {
        let now = clock.now()
        guard
            let (taken, activity) = boards.withLock({ boards -> ((APNSJSONValue, LiveActivityAlert?), LiveActivity)? in
                guard var entry = boards[id] else { return nil }
                defer { boards[id] = entry }
                return (entry.state.takeBroadcast(at: now), entry.activity)
            })
        else { return }
        let (board, alert) = taken
        do {
            let base = try await jobs.store.activity(id)?.contentState ?? activity.request.contentState
            let update = LiveActivityUpdate(
                event: .update,
                contentState: Self.contentState(base, board: board, alert: alert),
                alert: alert
            )
            _ = try await jobs.acceptor.accept(update, for: id)
            metrics.broadcasts.increment()
        } catch let error as LiveActivityError where error.code == "not_started" || error.code == "not_found" {
            // Ended (all arrived, its end_at, the API): the board is done.
            forget(id)
            return
        } catch {
            logger.warning(
                "a board broadcast was not accepted; the next post retries it",
                metadata: ["live_activity_id": .string(LiveActivityID.text(id)), "error": .string("\(error)")]
            )
            boards.withLock { $0[id]?.state.broadcastFailed(alert: alert) }
            return
        }
        // Posts merged while this one was accepted go one interval after it.
        scheduleBroadcast(id)
    }

    /// Drops the board of `id` from memory (its activity ended).
    public func forget(_ id: UUID) {
        _ = boards.withLock { $0.removeValue(forKey: id) }
    }

    /// Waits for the broadcasts scheduled now (tests, after moving the clock).
    public func settle() async {
        while true {
            let tasks = flushes.withLock { flushes -> [Task<Void, Never>] in
                defer { flushes = [:] }
                return Array(flushes.values)
            }
            if tasks.isEmpty { return }
            for task in tasks { await task.value }
        }
    }

    /// The boards in memory.
    public var count: Int { boards.withLock { $0.count } }

    private var attachedQueue: JobQueue {
        get throws {
            guard let queue = queue.queue else {
                throw LiveActivityError(.unavailable, code: "not_ready", message: "the job queue is not running yet")
            }
            return queue
        }
    }

    /// The most bytes of a broadcast's content state: APNs takes 4 KB for the whole push, and the
    /// `aps` around it takes a few hundred.
    static let contentStateBudget = 3_300

    /// The activity's content state with `"board"` set; when a large board would not fit in a
    /// push, its members are cut to those arrived first, then the nearest, and `"shown"` says how
    /// many it lists (`"arrived"` and `"total"` still count everyone).
    public static func contentState(
        _ base: APNSJSONValue,
        board: APNSJSONValue,
        alert: LiveActivityAlert?
    ) -> APNSJSONValue {
        var object = base.objectValue ?? [:]
        object["board"] = board
        let budget = contentStateBudget - (alert.map { $0.title.utf8.count + $0.body.utf8.count } ?? 0)
        func size(_ value: [String: APNSJSONValue]) -> Int {
            (try? APNSJSONValue.object(value).encodedPayload().count) ?? Int.max
        }
        guard size(object) > budget, case .object(var fields) = board, case .array(let members)? = fields["members"]
        else { return .object(object) }
        let ordered = members.sorted { lhs, rhs in
            func rank(_ member: APNSJSONValue) -> (Int, Int64) {
                guard case .object(let line) = member else { return (2, 0) }
                if line["arrived"] == .bool(true) { return (0, 0) }
                if case .integer(let eta)? = line["eta_minutes"] { return (1, eta) }
                return (2, 0)
            }
            return rank(lhs) < rank(rhs)
        }
        var (low, high) = (0, ordered.count)
        while low < high {
            let middle = (low + high + 1) / 2
            fields["members"] = .array(Array(ordered.prefix(middle)))
            fields["shown"] = .integer(Int64(middle))
            object["board"] = .object(fields)
            if size(object) <= budget { low = middle } else { high = middle - 1 }
        }
        fields["members"] = .array(Array(ordered.prefix(low)))
        fields["shown"] = .integer(Int64(low))
        object["board"] = .object(fields)
        return .object(object)
    }
}

extension BoardState.PostOutcome {
    var label: String {
        switch self {
        case .notAMember: "not_a_member"
        case .unchanged: "unchanged"
        case .changed: "changed"
        }
    }
}

/// The boards' metrics.
struct BoardMetrics: Sendable {
    let posts: Counter
    let broadcasts: Counter

    init(registry: MetricsRegistry) {
        posts = registry.counter("herald_board_posts_total", help: "Board posts, by result (changed, unchanged).")
        broadcasts = registry.counter(
            "herald_board_broadcasts_total",
            help: "Board broadcasts accepted: at most one per board per HERALD_BOARD_MIN_INTERVAL."
        )
    }
}
