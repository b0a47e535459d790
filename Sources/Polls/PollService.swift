import APNs
public import Foundation
public import HeraldCore
public import Jobs
public import LiveActivities
import Storage
import Synchronization

/// The job kinds of Polls. Each payload is `{"id": "<poll id>"}`.
public enum PollJobKind {
    /// Finalizes the poll at its `closes_at`.
    public static let close = "poll.close"
    /// Ends the poll's Live Activity with the final tally: enqueued by the transaction that made
    /// the poll final, so it runs once per poll and survives a restart.
    public static let end = "poll.end"
    /// Deletes final polls `HERALD_LIVE_ACTIVITY_RETENTION_DAYS` after they became final, hourly.
    public static let prune = "polls.prune"
}

/// What creates, votes on, finalizes and reads polls; its jobs close polls at `closes_at` and
/// end their Live Activities.
///
/// Built in two steps in `herald serve`: the jobs are built before the routes, and only the
/// routes' context has the Live Activities service, so the routes ``bind(_:)`` it.
///
/// ```swift
/// let polls = PollService(store: PollStore(database: db), liveActivities: activities)
/// let poll = try await polls.create(try PollInput.parseCreate(body, now: polls.now()))
/// let voted = try await polls.vote(poll.id, userID: "u1", app: nil, option: "accept")
/// ```
public final class PollService: Sendable {
    public let store: PollStore
    let clock: any HeraldClock
    let events: (any PollEvents)?
    let logger: Logger
    private let attached = AttachedJobQueue()
    private let activities = Mutex<LiveActivityService?>(nil)

    public init(
        store: PollStore,
        liveActivities: LiveActivityService? = nil,
        clock: any HeraldClock = SystemClock(),
        events: (any PollEvents)? = nil,
        logger: Logger = Logger(label: "herald.polls")
    ) {
        self.store = store
        self.clock = clock
        self.events = events
        self.logger = logger
        activities.withLock { $0 = liveActivities }
    }

    /// The Live Activities service polls start, update and end their activities with.
    public func bind(_ liveActivities: LiveActivityService) {
        activities.withLock { $0 = liveActivities }
    }

    /// The queue the close and end jobs go to.
    public func attach(_ queue: JobQueue) {
        attached.attach(queue)
    }

    /// Registers the handlers of ``PollJobKind``.
    public func register(on handlers: inout JobHandlers) {
        let options = JobKindOptions(maxAttempts: 20, retryBase: 2, retryMaximum: 300)
        handlers.register(PollJobKind.close, options: options) { [self] job in
            _ = try await close(try Self.pollID(job))
            return .done
        }
        handlers.register(PollJobKind.end, options: options) { [self] job in
            try await endActivity(try Self.pollID(job))
            return .done
        }
    }

    public func now() -> Date {
        clock.now()
    }

    var liveActivities: LiveActivityService {
        get throws(PollError) {
            guard let service = activities.withLock({ $0 }) else {
                throw PollError(.notConfigured, code: "not_configured", message: "Live Activities are not set up")
            }
            return service
        }
    }

    var queue: JobQueue {
        get throws(PollError) {
            guard let queue = attached.queue else {
                throw PollError(.unavailable, code: "not_ready", message: "the job queue is not running yet: retry")
            }
            return queue
        }
    }

    // MARK: Creating

    /// Creates a poll; with `live_activity`, first starts its activity on the members' devices
    /// with a broadcast channel of its own, showing the empty tally.
    public func create(_ request: PollRequest) async throws -> Poll {
        let service = try liveActivities
        let (app, environment) = try service.resolve(app: request.app, environment: request.environment)
        let queue = try queue
        let now = clock.now()
        var poll = Poll(
            id: ResourceIdentifier.next(),
            app: app.bundleID,
            environment: environment,
            question: request.question,
            options: request.options,
            members: request.members,
            hostUserID: request.hostUserID,
            closesAt: request.closesAt.map { Date(timeIntervalSince1970: TimeInterval($0)) },
            liveActivityID: nil,
            contentState: nil,
            createdAt: now,
            finalizedAt: nil
        )
        if let live = request.liveActivity {
            poll.contentState = live.contentState
            let body = JSONValue.object([
                "app": .string(app.bundleID),
                "environment": .string(environment.rawValue),
                "attributes_type": .string(live.attributesType),
                "attributes": live.attributes,
                "content_state": Self.contentState(of: poll),
                "alert": live.alert,
                "audience": .object(["users": .array(request.members.map { .string($0.userID) })]),
                "channel": .object(["create": .bool(true)]),
            ])
            let bytes = try body.encodedPayload()
            do {
                poll.liveActivityID = try await service.create(try LiveActivityInput.parseCreate(bytes, now: now)).0.id
            } catch let error as LiveActivityError {
                // What the activity refuses is a field of live_activity.
                throw PollError(
                    error.kind,
                    code: error.code,
                    message: error.message,
                    field: error.field.map { "live_activity.\($0)" },
                    retryAfter: error.retryAfter
                )
            }
        }
        let created = poll
        do {
            try await store.database.transaction { tx in
                try await self.store.insert(created, on: tx)
                if let closesAt = created.closesAt {
                    _ = try await queue.enqueue(Self.job(PollJobKind.close, created.id, at: closesAt), on: tx)
                }
            }
        } catch {
            // No poll: its activity, not started yet, is cancelled rather than left to run.
            if let activity = created.liveActivityID { _ = try? await service.cancel(activity) }
            throw error
        }
        queue.wake()
        return poll
    }

    // MARK: Voting

    /// Records `userID`'s vote (a change replaces the earlier one), counts, and makes the poll
    /// final when every member has voted, all in one transaction holding the poll's row lock: of
    /// concurrent last votes, on one instance or several, exactly one finalizes. Then broadcasts
    /// the tally to the poll's activity (the final one is its end, by the `poll.end` job).
    ///
    /// - Parameter permitted: the client token's `app` claim, if any.
    /// - Throws: ``PollError``: not found (unknown id, another app's poll, not a member), conflict
    ///   `poll_final`, unprocessable `unknown_option`.
    public func vote(_ id: UUID, userID: String, app permitted: String?, option: String) async throws -> Poll {
        let queue = try queue
        let now = clock.now()
        let (poll, finalized) = try await store.database.transaction { tx -> (Poll, Bool) in
            guard let poll = try await self.store.lockedPoll(id, on: tx),
                permitted == nil || permitted == poll.app,
                poll.members.contains(where: { $0.userID == userID })
            else { throw PollError.notFound }
            guard !poll.isFinal else { throw PollError.final }
            guard poll.options.contains(option) else {
                throw PollError(
                    .unprocessable,
                    code: "unknown_option",
                    message: "option must be one of the poll's options: \(poll.options.joined(separator: ", "))",
                    field: "option"
                )
            }
            try await self.store.vote(id, userID: userID, option: option, at: now, on: tx)
            var voted = poll
            voted.members = voted.members.map { member in
                var member = member
                if member.userID == userID { member.option = option }
                return member
            }
            guard voted.members.allSatisfy({ $0.option != nil }) else { return (voted, false) }
            let finalized = try await self.finalizeLocked(voted, reason: .allVoted, now: now, queue: queue, on: tx)
            return (finalized ?? voted, finalized != nil)
        }
        if finalized {
            queue.wake()
            events?.pollEventsCommitted()
        } else {
            await broadcast(poll)
        }
        return poll
    }

    // MARK: Finalizing

    /// Makes the poll final now (the API key, the host, or its `closes_at`).
    ///
    /// - Parameters:
    ///   - hostUserID: for the host's client token: anyone else, or a poll without a host, is 404.
    ///   - alreadyFinal: `true` refuses a final poll with 409 `poll_final`; `false` returns it.
    /// - Returns: the poll as it is now.
    public func finalize(
        _ id: UUID,
        reason: PollEvent.Reason,
        hostUserID: String? = nil,
        app permitted: String? = nil,
        alreadyFinal refuse: Bool = true
    ) async throws -> Poll {
        let queue = try queue
        let now = clock.now()
        let (poll, finalized) = try await store.database.transaction { tx -> (Poll, Bool) in
            guard let poll = try await self.store.lockedPoll(id, on: tx), permitted == nil || permitted == poll.app
            else { throw PollError.notFound }
            if let hostUserID, poll.hostUserID != hostUserID {
                // A member who is not the host may read the poll: say why rather than hide it.
                if poll.members.contains(where: { $0.userID == hostUserID }) {
                    throw PollError(
                        .forbidden,
                        code: "not_host",
                        message: "only the poll's host_user_id may finalize it early",
                        field: "id"
                    )
                }
                throw PollError.notFound
            }
            guard !poll.isFinal else {
                if refuse { throw PollError.final }
                return (poll, false)
            }
            let finalized = try await self.finalizeLocked(poll, reason: reason, now: now, queue: queue, on: tx)
            return (finalized ?? poll, finalized != nil)
        }
        if finalized {
            queue.wake()
            events?.pollEventsCommitted()
        }
        return poll
    }

    /// Finalizes the poll at its `closes_at` (the `poll.close` job); a final or deleted poll is left as it is.
    private func close(_ id: UUID) async throws -> Poll? {
        do {
            return try await finalize(id, reason: .closesAt, alreadyFinal: false)
        } catch let error as PollError where error.kind == .notFound {
            return nil  // deleted meanwhile
        }
    }

    /// Inside the transaction holding the poll's lock: marks it final (once), records its event
    /// and commits the job that ends its activity. `nil` when it was final already.
    private func finalizeLocked(
        _ poll: Poll,
        reason: PollEvent.Reason,
        now: Date,
        queue: JobQueue,
        on tx: any DatabaseExecutor
    ) async throws -> Poll? {
        guard try await store.finalize(poll.id, at: now, on: tx) else { return nil }
        var final = poll
        final.finalizedAt = now
        try await events?.pollsFinalized(
            [
                PollEvent(
                    id: poll.id,
                    app: poll.app,
                    environment: poll.environment,
                    reason: reason,
                    result: final.tally,
                    at: now
                )
            ],
            on: tx
        )
        if poll.liveActivityID != nil {
            _ = try await queue.enqueue(Self.job(PollJobKind.end, poll.id), on: tx)
        }
        return final
    }

    // MARK: Broadcasting

    /// The most bytes a broadcast content state may take: APNs takes 4 KB a payload, `aps` and
    /// its other fields included.
    static let maximumContentStateBytes = 3_584

    /// The activity's content state with `poll`: the tally now. When the names of a large group
    /// do not fit in a push, each option lists only its first names (its `count` stays whole).
    static func contentState(of poll: Poll) -> JSONValue {
        let base = poll.contentState?.objectValue ?? [:]
        let whole = poll.tally
        func state(keeping kept: Int) -> JSONValue {
            var tally = whole
            for index in tally.options.indices {
                tally.options[index].names = Array(whole.options[index].names.prefix(kept))
            }
            var state = base
            state["poll"] = tally.json
            return .object(state)
        }
        func fits(_ value: JSONValue) -> Bool {
            ((try? value.encodedPayload().count) ?? .max) <= maximumContentStateBytes
        }
        // The most names per option that fit: a binary search, each step one encoding.
        var (low, high) = (0, whole.options.map(\.names.count).max() ?? 0)
        if fits(state(keeping: high)) { return state(keeping: high) }
        while low < high - 1 {
            let middle = (low + high) / 2
            if fits(state(keeping: middle)) { low = middle } else { high = middle }
        }
        return state(keeping: low)
    }

    /// Sends the tally to the poll's activity. Best effort: a vote is recorded whether or not
    /// its broadcast is (the next vote's, or the final end, carries the whole tally).
    ///
    /// The tally is read again just before it is handed over, so that of votes committed at the
    /// same moment the broadcast accepted last shows them all; a final poll is left to its end.
    private func broadcast(_ voted: Poll) async {
        guard voted.liveActivityID != nil, let service = try? liveActivities else { return }
        do {
            guard let poll = try await store.poll(voted.id), !poll.isFinal, let activity = poll.liveActivityID
            else { return }
            _ = try await service.update(
                activity,
                LiveActivityUpdate(event: .update, contentState: Self.contentState(of: poll))
            )
        } catch {
            logger.info(
                "a poll's tally was not broadcast",
                metadata: [
                    "poll_id": .string(RequestIdentifier.lowercaseString(voted.id)), "error": .string("\(error)"),
                ]
            )
        }
    }

    /// Ends the final poll's activity with the final tally (the `poll.end` job), or cancels it
    /// when it has not started; one that is no longer running needs nothing. What cannot be done
    /// yet (its push-to-starts being sent) throws, and the job tries again.
    func endActivity(_ id: UUID) async throws {
        guard let poll = try await store.poll(id), poll.isFinal, let activity = poll.liveActivityID else { return }
        let service = try liveActivities
        do {
            _ = try await service.jobs.acceptor.accept(
                LiveActivityUpdate(event: .end, contentState: Self.contentState(of: poll)),
                for: activity,
                reason: .pollFinal
            )
        } catch let error as LiveActivityError where error.kind == .conflict || error.kind == .notFound {
            switch try await service.store.activity(activity)?.state {
            case .scheduled?:
                // Not started yet: its start is cancelled. While its push-to-starts are being
                // sent, that is a conflict too, and the job tries again once it is started.
                _ = try await service.cancel(activity)
            case .started?:
                throw error  // started meanwhile: the next attempt ends it
            case nil, .ended?, .cancelled?, .failed?, .expired?:
                return  // gone, or not running any more: nothing to end
            }
        }
    }

    // MARK: Reading

    /// The poll: through the API key (`userID` nil) any poll; through a client token only one the
    /// user is a member of, of the token's app: to anyone else it does not exist.
    public func read(_ id: UUID, userID: String? = nil, app permitted: String? = nil) async throws -> Poll {
        guard let poll = try await store.poll(id), permitted == nil || permitted == poll.app,
            userID == nil || poll.members.contains(where: { $0.userID == userID })
        else { throw PollError.notFound }
        return poll
    }

    /// Polls newest first (``PollStore/list(app:limit:cursor:)``).
    public func list(limit: Int, cursor: String?) async throws -> (items: [Poll], next: String?) {
        try await store.list(app: nil, limit: limit, cursor: cursor)
    }

    // MARK: Jobs

    static func job(_ kind: String, _ id: UUID, at dueAt: Date? = nil) -> NewJob {
        let text = RequestIdentifier.lowercaseString(id)
        return NewJob(kind: kind, payload: #"{"id":"\#(text)"}"#, dueAt: dueAt, uniqueKey: "\(kind):\(text)")
    }

    static func pollID(_ job: Job) throws -> UUID {
        guard case .object(let object) = try JSONValue.parse(Array(job.payload.utf8)),
            let text = object["id"]?.stringValue, let id = RequestIdentifier.uuid(text)
        else {
            throw PollError.invalid("invalid_job", "a poll job's payload must be {\"id\": \"<poll id>\"}", field: nil)
        }
        return id
    }
}
