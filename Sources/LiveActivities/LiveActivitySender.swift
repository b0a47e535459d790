import APNs
public import APNsTransport
public import Devices
public import Foundation
public import HeraldCore
public import Jobs
import Storage
import Synchronization

/// The job kinds of Live Activities. Each payload is `{"id": "<activity id>"}`, plus the update
/// for `live_activity.send`.
public enum LiveActivityJobKind {
    /// Sends the push-to-start pushes (at `start_at`, or at once).
    public static let start = "live_activity.start"
    /// Sends one accepted update or end along its routes.
    public static let send = "live_activity.send"
    /// Ends the activity at `end_at`.
    public static let scheduledEnd = "live_activity.end"
    /// Marks an activity still running 8 hours after its start `expired`.
    public static let expire = "live_activity.expire"
    /// Deletes the channel Herald created, once the activity ended and the retention passed.
    public static let deleteChannel = "live_activity.delete_channel"
}

/// The payload of the Live Activities jobs other than `live_activity.send`.
struct LiveActivityJob: Codable, Sendable {
    var id: UUID
    /// A `live_activity.start` after the activity started: only these push-to-start tokens, which
    /// APNs did not take (429, 5xx, no connection) while it took others.
    var tokens: [String]? = nil
    /// Which such job of the activity this is (1, 2, …): each names its own unique key.
    var round: Int? = nil
    /// A `live_activity.delete_channel` for a channel the activity does not hold: one made for a
    /// create that another with the same id and body beat to the insert.
    var channel: String? = nil
}

/// One accepted update or end to route.
struct LiveActivitySend: Sendable, Hashable {
    var id: UUID
    var update: LiveActivityUpdate
    /// Only this instance (the iOS activity id): an instance that registered after the update.
    var instance: String?
}

/// The payload of `live_activity.send` (`json` in LiveActivityJSON.swift): the updates one batch
/// accepted, in the order they were stamped.
struct LiveActivitySendJob: Sendable, Hashable {
    var sends: [LiveActivitySend]
}

/// Runs the Live Activities jobs: the push-to-start, the routing of updates and ends (in
/// `+Routing`), the scheduled end, the 8-hour expiry and the channel's deletion.
///
/// Every job checks the activity's state first, so a job run twice (a lease that expired after
/// the work) or a cancelled activity sends nothing more: one start and one end per activity.
public final class LiveActivitySender: Sendable {
    public let store: LiveActivityStore
    public let devices: DeviceStore
    public let clients: APNSClientProvider
    public let channels: any LiveActivityChannels
    public let clock: any HeraldClock
    /// How long a channel Herald created outlives its activity's end.
    public let channelRetention: TimeInterval
    let logger: Logger
    let metrics: LiveActivityMetrics
    private let attached: AttachedJobQueue
    /// Updates and ends accepted at the same time: one transaction and one send job a batch.
    let accepts: GroupCommit<LiveActivityAcceptance, LiveActivityRouteCounts>

    public init(
        store: LiveActivityStore,
        devices: DeviceStore,
        clients: APNSClientProvider,
        channels: any LiveActivityChannels,
        clock: any HeraldClock = SystemClock(),
        channelRetention: TimeInterval = 3_600,
        logger: Logger = Logger(label: "herald.live-activities"),
        metrics: MetricsRegistry = .shared
    ) {
        self.store = store
        self.devices = devices
        self.clients = clients
        self.channels = channels
        self.clock = clock
        self.channelRetention = channelRetention
        self.logger = logger
        self.metrics = LiveActivityMetrics(registry: metrics)
        let attached = AttachedJobQueue()
        self.attached = attached
        accepts = GroupCommit(maximumBatch: 256) { batch in
            try await Self.accept(batch, store: store, queue: try attached.attachedQueue, now: clock.now())
        }
    }

    /// The queue follow-up jobs go to (the queue is made after the handlers are registered).
    public func attach(_ queue: JobQueue) {
        attached.attach(queue)
    }

    var queue: JobQueue {
        get throws { try attached.attachedQueue }
    }

    /// Registers every Live Activities job kind.
    public func register(on handlers: inout JobHandlers) {
        let options = JobKindOptions(maxAttempts: 20, retryBase: 2, retryMaximum: 300)
        handlers.register(LiveActivityJobKind.start, options: options) { [self] job in
            try await start(try Self.payload(job), attempt: job.attempts, options: options)
        }
        handlers.register(LiveActivityJobKind.send, options: options) { [self] job in
            let payload = try LiveActivitySendJob(json: try LiveActivityStore.value(job.payload))
            return try await route(payload.sends, attempt: job.attempts, options: options)
        }
        handlers.register(LiveActivityJobKind.scheduledEnd, options: options) { [self] job in
            try await scheduledEnd(try Self.payload(job).id)
        }
        handlers.register(LiveActivityJobKind.expire, options: options) { [self] job in
            try await expire(try Self.payload(job).id)
        }
        handlers.register(LiveActivityJobKind.deleteChannel, options: options) { [self] job in
            try await deleteChannel(try Self.payload(job))
        }
    }

    static func payload(_ job: Job) throws -> LiveActivityJob {
        try JSONDecoder().decode(LiveActivityJob.self, from: Data(job.payload.utf8))
    }

    /// A job of `kind` for one activity, at most one of that kind (and round) per activity.
    static func job(_ kind: String, _ payload: LiveActivityJob, at dueAt: Date? = nil) throws -> NewJob {
        NewJob(
            kind: kind,
            payload: try LiveActivityStore.json(payload),
            dueAt: dueAt,
            uniqueKey: "\(kind):\(LiveActivityID.text(payload.id))" + (payload.round.map { ":\($0)" } ?? "")
        )
    }

    /// The `live_activity.send` jobs of these sends: one, unless its payload would be over the
    /// queue's limit (a batch of updates near the 4 KB content limit), then halves until each fits.
    static func sendJobs(_ sends: [LiveActivitySend], at dueAt: Date? = nil) throws -> [NewJob] {
        let payload = try LiveActivityStore.text(LiveActivitySendJob(sends: sends).json)
        if payload.utf8.count > JobQueue.maximumPayloadBytes, sends.count > 1 {
            let half = sends.count / 2
            return try sendJobs(Array(sends[..<half]), at: dueAt) + sendJobs(Array(sends[half...]), at: dueAt)
        }
        return [NewJob(kind: LiveActivityJobKind.send, payload: payload, dueAt: dueAt)]
    }

    func app(_ activity: LiveActivity) throws -> APNSAppConfiguration {
        try app(activity.app)
    }

    func app(_ bundleID: String) throws -> APNSAppConfiguration {
        guard let app = clients.apps.first(where: { $0.bundleID == bundleID }) else {
            throw LiveActivityError(
                .unavailable,
                code: "unknown_app",
                message: "the app \(bundleID) is no longer configured"
            )
        }
        return app
    }

    // MARK: Start

    /// Sends the push-to-start to every token of the audience; `started` when APNs accepted at
    /// least one, `failed` when it accepted none and no retry can help. The deliveries, the new
    /// state and the follow-up jobs are one transaction.
    ///
    /// When APNs took some tokens and not others (429, 5xx, no connection), the activity is
    /// started and a job of the same kind sends to the others again after the kind's backoff, with
    /// the attempts this one has left (`tokens` in the payload); such a job sends the latest
    /// content and does nothing once the activity is no longer running. When APNs took none and a
    /// retry can help, the job itself retries; after its last attempt the activity is `failed`.
    func start(_ job: LiveActivityJob, attempt: Int, options: JobKindOptions) async throws -> JobOutcome {
        let id = job.id
        guard let activity = try await store.activity(id) else { return .failed(reason: "no such activity") }
        guard activity.state == (job.tokens == nil ? .scheduled : .started) else { return .done }
        let app = try app(activity)
        let targets: (tokens: [String], users: [String])
        if let tokens = job.tokens { targets = (tokens, []) } else { targets = try await pushToStartTokens(activity) }
        guard !targets.tokens.isEmpty else {
            let queue = try queue
            let deletion = try Self.channelDeletion(of: activity, at: clock.now())
            try await store.database.transaction { tx in
                guard
                    try await self.store.transition(
                        id,
                        from: [.scheduled],
                        to: .failed,
                        at: self.clock.now(),
                        reason: "no push-to-start token: the audience has none for \(activity.attributesType)",
                        on: tx
                    )
                else { return }
                if let deletion { _ = try await queue.enqueue(deletion, on: tx) }
            }
            queue.wake()
            return .done
        }
        // From here the activity may show on devices: a cancel would leave it there with no way to
        // end it, so cancels are refused until the job is done (or finds APNs took none).
        // The users the push-to-starts go to are recorded before any leaves: a device that
        // received one may report its instance at once.
        let timestamp = try await store.database.transaction { tx -> Int64? in
            if job.tokens == nil {
                guard try await self.store.markStarting(id, true, on: tx) else { return nil }
                try await self.store.addUsers(ofPushToStartTokens: targets.tokens, of: activity, on: tx)
            }
            return try await self.store.stampStart(id, now: self.clock.now(), on: tx)
        }
        guard let timestamp else { return .done }
        let request = activity.request
        let payload = try APNSLiveActivityPayload.start(
            attributesType: activity.attributesType,
            attributes: request.attributesSent(id: id),
            contentState: job.tokens == nil ? request.contentState : activity.contentState,
            alert: request.alert.apns,
            timestamp: Date(timeIntervalSince1970: TimeInterval(timestamp)),
            staleDate: request.staleDate.map { Date(timeIntervalSince1970: TimeInterval($0)) },
            relevanceScore: request.relevanceScore,
            inputPushToken: request.requestUpdateToken && activity.channelID == nil,
            inputPushChannel: activity.channelID
        ).encodedPayload()
        let client = try clients.client(for: app, environment: activity.environment)
        let results = await Self.sendAll(
            targets.tokens.map { token in
                APNSRequest(
                    deviceToken: token,
                    pushType: .liveActivity,
                    topic: .bundleID(app.bundleID),
                    payload: payload,
                    priority: .immediately
                )
            }
        ) { try await client.send($0) }
        var accepted = 0
        var again: [String] = []
        var deliveries: [LiveActivityDelivery] = []
        for (token, result) in zip(targets.tokens, results) {
            let delivery = record(result, event: "start", route: .pushToStart, token: token)
            deliveries.append(delivery)
            switch outcome(result) {
            case .delivered: accepted += 1
            case .retryable: again.append(token)
            case .tokenInvalid(let at):
                try await store.invalidatePushToStart(
                    app: activity.app,
                    environment: activity.environment,
                    attributesType: activity.attributesType,
                    token: token,
                    reason: delivery.reason ?? "Unregistered",
                    at: at,
                    now: clock.now()
                )
            case .refused: break
            }
        }
        if accepted == 0, !again.isEmpty, attempt < options.maxAttempts {
            let written = deliveries
            try await store.database.transaction { tx in
                try await self.store.insert(written.map { (id, $0) }, on: tx)
                if job.tokens == nil { _ = try await self.store.markStarting(id, false, on: tx) }
            }
            return .retry(reason: "APNs did not accept the push-to-start yet")
        }
        // The tokens APNs did not take yet, in a job of their own: due after the kind's backoff,
        // with the attempts this one has left.
        var rest: NewJob?
        if !again.isEmpty, attempt < options.maxAttempts {
            let delay = options.retryDelay(afterAttempt: attempt, jitter: Double.random(in: 0.5...1))
            var next = try Self.job(
                LiveActivityJobKind.start,
                LiveActivityJob(id: id, tokens: again, round: (job.round ?? 0) + 1),
                at: clock.now().addingTimeInterval(delay)
            )
            next.maxAttempts = max(1, options.maxAttempts - attempt)
            rest = next
        }
        let queue = try queue
        let now = clock.now()
        let (written, followUp, anyAccepted, gaveUp) = (deliveries, rest, accepted > 0, !again.isEmpty)
        let deletion = accepted == 0 && job.tokens == nil ? try Self.channelDeletion(of: activity, at: now) : nil
        try await store.database.transaction { tx in
            try await self.store.insert(written.map { (id, $0) }, on: tx)
            if let followUp { _ = try await queue.enqueue(followUp, on: tx) }
            guard job.tokens == nil else { return }
            guard anyAccepted else {
                guard
                    try await self.store.transition(
                        id,
                        from: [.scheduled],
                        to: .failed,
                        at: now,
                        reason: !gaveUp
                            ? "APNs accepted no push-to-start"
                            : "APNs accepted no push-to-start in \(attempt) attempts",
                        on: tx
                    )
                else { return }
                if let deletion { _ = try await queue.enqueue(deletion, on: tx) }
                return
            }
            guard try await self.store.transition(id, from: [.scheduled], to: .started, at: now, on: tx) else { return }
            _ = try await queue.enqueue(
                Self.job(
                    LiveActivityJobKind.expire,
                    LiveActivityJob(id: id),
                    at: now.addingTimeInterval(LiveActivityLimits.maximumActivityDuration)
                ),
                on: tx
            )
            if let end = activity.request.endAt {
                _ = try await queue.enqueue(
                    Self.job(
                        LiveActivityJobKind.scheduledEnd,
                        LiveActivityJob(id: id),
                        at: Date(timeIntervalSince1970: TimeInterval(end))
                    ),
                    on: tx
                )
            }
        }
        queue.wake()
        return .done
    }

    /// The audience's push-to-start tokens and the users they belong to.
    func pushToStartTokens(_ activity: LiveActivity) async throws -> (tokens: [String], users: [String]) {
        let (app, environment, type) = (activity.app, activity.environment, activity.attributesType)
        let users: [String]
        switch activity.request.audience {
        case .tokens(let tokens):
            let live = try await store.livePushToStartTokens(
                app: app,
                environment: environment,
                attributesType: type,
                tokens: tokens
            )
            return (live, [])
        case .users(let list): users = list
        case .anyTag(let tags):
            users = try await devices.users(app: app, environment: environment, selector: .anyTag(tags))
        case .allTags(let tags):
            users = try await devices.users(app: app, environment: environment, selector: .allTags(tags))
        case .all: users = try await devices.users(app: app, environment: environment, selector: .all)
        }
        let found = try await store.pushToStartTokens(
            app: app,
            environment: environment,
            attributesType: type,
            users: users
        )
        return (found.map(\.token), Array(Set(found.map(\.userID))).sorted())
    }

    // MARK: End, expiry, channel

    /// `end_at` came: ends the activity with its latest content, unless it ended already.
    func scheduledEnd(_ id: UUID) async throws -> JobOutcome {
        guard let activity = try await store.activity(id) else { return .done }
        guard activity.state == .started else { return .done }
        let update = LiveActivityUpdate(event: .end, contentState: activity.contentState)
        _ = try await accept(update, for: id)
        return .done
    }

    /// 8 hours after the start: iOS has ended the activity, so Herald marks it `expired`.
    func expire(_ id: UUID) async throws -> JobOutcome {
        let queue = try queue
        let now = clock.now()
        let retention = channelRetention
        try await store.database.transaction { tx in
            guard try await self.store.transition(id, from: [.started], to: .expired, at: now, on: tx),
                let activity = try await self.store.activity(id, on: tx), activity.channelCreated
            else { return }
            _ = try await queue.enqueue(
                Self.job(
                    LiveActivityJobKind.deleteChannel,
                    LiveActivityJob(id: id),
                    at: now.addingTimeInterval(retention)
                ),
                on: tx
            )
        }
        queue.wake()
        return .done
    }

    /// Deletes the channel Herald created for an activity that ended, was cancelled or failed (or
    /// the one in the payload, made for a create that lost the race to the insert).
    func deleteChannel(_ job: LiveActivityJob) async throws -> JobOutcome {
        guard let activity = try await store.activity(job.id),
            let channel = job.channel ?? (activity.channelCreated ? activity.channelID : nil)
        else { return .done }
        do {
            try await channels.delete(
                app: try app(activity),
                environment: activity.environment,
                channelID: APNSChannelID(rawValue: channel)
            )
        } catch let rejection as APNSRejection where rejection.category == .channelInvalid {
            return .done
        }
        return .done
    }

    /// The deletion, due at once, of the channel Herald created for an activity that will never
    /// run (cancelled, or failed: no device ever subscribed to it); `nil` without such a channel.
    static func channelDeletion(of activity: LiveActivity, at now: Date) throws -> NewJob? {
        guard activity.channelCreated, activity.channelID != nil else { return nil }
        return try job(LiveActivityJobKind.deleteChannel, LiveActivityJob(id: activity.id), at: now)
    }
}

/// The job queue, attached after the sender is made (the queue needs the sender's handlers).
extension AttachedJobQueue {
    var attachedQueue: JobQueue {
        get throws {
            guard let queue = self.queue else {
                throw LiveActivityError(.unavailable, code: "not_ready", message: "the job queue is not attached yet")
            }
            return queue
        }
    }
}
