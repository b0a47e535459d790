public import APNs
public import Foundation
public import HeraldCore
public import Jobs
public import LiveActivities
import Storage
import Synchronization

/// The live boards: members' posts merged (``BoardLedger``: in memory on SQLite, in unlogged
/// tables every instance shares on PostgreSQL) and broadcast on the activity's channel at most
/// once per interval, each broadcast carrying the latest board. A post writes nothing durable,
/// except a member's first post and arrival (few), which make the nudge, the first-arrival alert
/// and the all-arrived end happen once.
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
    let ledger: any BoardLedger
    let metrics: BoardMetrics
    let logger: Logger

    /// The boards this instance served, as loaded.
    private let boards = Mutex<[UUID: BoardInfo]>([:])
    /// The broadcast attempt waiting for its time, one per board.
    private let attempts = Mutex(Attempts())

    /// The broadcast attempts: waiting for their time (one per board), and running, each under
    /// its own serial number (several of one board may run at once: a later one while an earlier
    /// one's broadcast is accepted).
    private struct Attempts {
        var waiting: [UUID: (serial: Int, time: Date, task: Task<Void, Never>)] = [:]
        var running: [Int: Task<Void, Never>] = [:]
        var serial = 0
    }

    /// - Parameter shared: keep the boards in the database's unlogged tables, for several
    ///   instances on one PostgreSQL; default: when the database is PostgreSQL.
    public init(
        store: BoardStore,
        jobs: LiveActivityJobs,
        queue: AttachedJobQueue,
        clock: any HeraldClock,
        interval: TimeInterval = 1,
        shared: Bool? = nil,
        metrics: MetricsRegistry = .shared,
        logger: Logger = Logger(label: "herald.boards")
    ) {
        self.store = store
        self.jobs = jobs
        self.queue = queue
        self.clock = clock
        self.interval = max(1, interval)
        self.ledger =
            shared ?? (store.database.dialect == .postgres)
            ? SharedBoardLedger(database: store.database) : MemoryBoardLedger()
        self.metrics = BoardMetrics(registry: metrics)
        self.logger = logger
    }

    /// Attempts still waiting for their time have no hub to broadcast for: they end now rather
    /// than at their time (on a manual clock, never).
    deinit {
        for waiting in attempts.withLock({ $0.waiting.values }) { waiting.task.cancel() }
    }

    /// Merges `userID`'s ETA into the board of activity `id` and returns the merged board, as
    /// JSON text (``BoardState/jsonBytes()``). A change is broadcast at once, or one interval after the previous broadcast.
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
    ) async throws -> [UInt8] {
        let board = try await load(id)
        guard permitted == nil || permitted == board.activity.app,
            board.members.contains(where: { $0.userID == userID })
        else { throw LiveActivityError.notFound }
        let now = clock.now()
        let posted = try await ledger.post(etaMinutes, by: userID, to: board, at: now, interval: interval)
        metrics.posts.increment(labels: [("result", posted.outcome.label)])
        var arrived = false
        if case .changed(_, let arrival) = posted.outcome { arrived = arrival }
        if arrived || posted.outcome.isFirstPost {
            try await persist(userID, of: board, arrived: arrived, at: now)
        }
        if let attempt = posted.attemptAt { schedule(id, at: attempt) }
        return posted.board
    }

    /// Records a first post or an arrival; the first arrival queues its alert for the next
    /// broadcast, the last schedules the end.
    private func persist(_ userID: String, of board: BoardInfo, arrived: Bool, at now: Date) async throws {
        let options = board.activity.request.board
        let queue = try attachedQueue
        let id = board.id
        let recorded = try await store.record(userID, of: id, arrived: arrived, members: board.members.count, at: now) {
            recorded,
            tx in
            if recorded.allArrived, let delay = options?.endWhenAllArrived {
                _ = try await queue.enqueue(
                    BoardJobKind.endJob(id, at: now.addingTimeInterval(TimeInterval(delay))),
                    on: tx
                )
            }
        }
        boards.withLock { boards in
            guard var board = boards[id] else { return }
            if board.posted[userID] == nil { board.posted[userID] = now }
            if arrived { board.arrived.insert(userID) }
            boards[id] = board
        }
        if recorded.allArrived { queue.wake() }
        if recorded.firstArrival, let template = options?.arrivalAlert {
            let name = board.members.first { $0.userID == userID }?.name ?? userID
            let alert = LiveActivityAlert(
                title: template.title.replacingOccurrences(of: "{name}", with: name),
                body: template.body.replacingOccurrences(of: "{name}", with: name)
            )
            schedule(id, at: try await ledger.queueAlert(alert, for: board, at: now, interval: interval))
        }
    }

    /// The board of `id`, loaded from the activity and its persisted members once.
    private func load(_ id: UUID) async throws -> BoardInfo {
        if let board = boards.withLock({ $0[id] }) { return board }
        guard let activity = try await jobs.store.activity(id), let members = activity.request.members,
            activity.request.board != nil
        else { throw LiveActivityError.notFound }
        guard activity.state == .started else { throw LiveActivityError.notStarted(activity.state) }
        let (posted, arrived) = try await store.members(of: id)
        let loaded = BoardInfo(activity: activity, members: members, posted: posted, arrived: arrived)
        return boards.withLock { boards in
            if let existing = boards[id] { return existing }
            boards[id] = loaded
            return loaded
        }
    }

    /// Runs a broadcast attempt for `id` at `time`, unless one is waiting already (that one
    /// finds the change, or schedules itself again).
    private func schedule(_ id: UUID, at time: Date) {
        attempts.withLock { attempts in
            guard attempts.waiting[id] == nil else { return }
            attempts.serial += 1
            let serial = attempts.serial
            // A task of its own: the attempt waits on the clock until the slot's time (one interval
            // after the last broadcast) while posts go on being answered; one waits per board. It
            // holds the hub weakly: the hub holds the task, and a hub let go (shutdown, a test's
            // end) must not be kept alive by an attempt still waiting for its time.
            let clock = self.clock
            let task = Task { [weak self] in
                if time > clock.now() { try? await clock.sleep(until: time) }
                guard let self else { return }
                // Running: a change merged from now on schedules the next attempt.
                self.attempts.withLock { attempts in
                    if let waiting = attempts.waiting[id], waiting.serial == serial {
                        attempts.waiting[id] = nil
                        attempts.running[serial] = waiting.task
                    }
                }
                await attempt(id)
                _ = self.attempts.withLock { $0.running.removeValue(forKey: serial) }
            }
            attempts.waiting[id] = (serial, time, task)
        }
    }

    /// Broadcasts the latest board of `id` if a change waits and the interval passed, with the
    /// arrival alert once; otherwise waits for the slot's time.
    private func attempt(_ id: UUID) async {
        guard let board = boards.withLock({ $0[id] }) else { return }
        let now = clock.now()
        let claim: BoardClaim
        do {
            claim = try await ledger.claim(board, at: now, interval: interval)
        } catch {
            logger.warning(
                "a board's broadcast slot could not be read; the next post retries it",
                metadata: ["live_activity_id": .string(LiveActivityID.text(id)), "error": .string("\(error)")]
            )
            return
        }
        switch claim {
        case .nothing:
            return
        case .later(let time):
            schedule(id, at: time)
        case .broadcast(let content, let alert):
            do {
                let base = try await jobs.store.activity(id)?.contentState ?? board.activity.request.contentState
                let update = LiveActivityUpdate(
                    event: .update,
                    contentState: Self.contentState(base, board: content, alert: alert),
                    alert: alert
                )
                _ = try await jobs.acceptor.accept(update, for: id)
                metrics.broadcasts.increment()
            } catch let error as LiveActivityError where error.code == "not_started" || error.code == "not_found" {
                // Ended (all arrived, its end_at, the API): the board is done.
                await forget(id)
                return
            } catch {
                logger.warning(
                    "a board broadcast was not accepted; the next post retries it",
                    metadata: ["live_activity_id": .string(LiveActivityID.text(id)), "error": .string("\(error)")]
                )
                await ledger.failed(board, alert: alert)
                return
            }
            // Posts merged meanwhile go one interval after this broadcast.
            schedule(id, at: now.addingTimeInterval(interval))
        }
    }

    /// The activity's content state with its board as it stands, for the end: posts merged since
    /// the last broadcast are in it. `nil` when the board cannot be read (the activity ended).
    func finalContent(_ id: UUID) async throws -> APNSJSONValue? {
        guard let board = try? await load(id) else { return nil }
        let latest = try await ledger.current(board)
        let base = try await jobs.store.activity(id)?.contentState ?? board.activity.request.contentState
        return Self.contentState(base, board: latest, alert: nil)
    }

    /// Drops the board of `id` (its activity ended).
    public func forget(_ id: UUID) async {
        _ = boards.withLock { $0.removeValue(forKey: id) }
        await ledger.forget(id)
    }

    /// Waits for the broadcast attempts due by now (tests, after moving the clock); the ones
    /// they schedule for later are left waiting.
    public func settle() async {
        while true {
            let now = clock.now()
            // Each attempt leaves both lists when it ends: a finished one is never awaited again.
            let due = attempts.withLock { attempts in
                attempts.waiting.values.filter { $0.time <= now }.map(\.task) + Array(attempts.running.values)
            }
            if due.isEmpty { return }
            for task in due { await task.value }
        }
    }

    /// The boards this instance serves.
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
