public import APNs
public import APNsTransport
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

/// The users an audience of tags or everyone names, for a push-to-start to reach their
/// push-to-start tokens. `herald serve` answers from the device registry: Live Activities do not
/// depend on the Devices module.
public protocol LiveActivityUserDirectory: Sendable {
    /// The users of `app` in `environment` with an active device that `selector` matches, each
    /// once, at most as many as an audience of users may name.
    func users(
        app: String,
        environment: APNSEnvironment,
        matching selector: LiveActivityUserSelector
    ) async throws
        -> [String]
}

/// Which users' devices a push-to-start audience of tags or everyone selects.
public enum LiveActivityUserSelector: Sendable, Hashable {
    /// Devices with at least one of the tags.
    case anyTag([String])
    /// Devices with every one of the tags.
    case allTags([String])
    /// Every active device of the app and environment.
    case all
}

/// What the parts of Live Activities share: the store, the APNs clients and channels, the clock,
/// and the job queue once it is attached.
struct LiveActivityParts: Sendable {
    var store: LiveActivityStore
    var users: any LiveActivityUserDirectory
    var clients: APNSClientProvider
    var channels: any LiveActivityChannels
    var clock: any HeraldClock
    /// How long a channel Herald created outlives its activity's end.
    var channelRetention: TimeInterval
    var logger: Logger
    var metrics: LiveActivityMetrics
    var attached: AttachedJobQueue
    /// Where started, ended and failed activities are reported (webhooks), if anywhere.
    var events: (any LiveActivityEvents)?
    /// Sends a batch's pushes, at most 256 waiting for APNs at once (the client's budget bounds
    /// what waits across senders).
    var fanOut: APNSFanOut
}

/// A type built on ``LiveActivityParts``: reads them as its own properties.
protocol LiveActivityPart: Sendable {
    var parts: LiveActivityParts { get }
}

extension LiveActivityPart {
    var store: LiveActivityStore { parts.store }
    var clients: APNSClientProvider { parts.clients }
    var channels: any LiveActivityChannels { parts.channels }
    var clock: any HeraldClock { parts.clock }
    var channelRetention: TimeInterval { parts.channelRetention }
    var logger: Logger { parts.logger }
    var metrics: LiveActivityMetrics { parts.metrics }

    /// Reports started, ended and failed activities inside the transaction that changed them.
    func report(_ events: [LiveActivityEvent], on executor: any DatabaseExecutor) async throws {
        guard let recorder = parts.events, !events.isEmpty else { return }
        try await recorder.liveActivitiesChanged(events, on: executor)
    }

    /// After a transaction that reported events committed.
    func eventsCommitted() {
        parts.events?.liveActivityEventsCommitted()
    }

    /// The queue follow-up jobs go to.
    var queue: JobQueue {
        get throws { try parts.attached.attachedQueue }
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
}

/// The Live Activities jobs and the acceptance of updates: ``LiveActivityAcceptor`` takes updates
/// and ends into send jobs, ``LiveActivitySender`` routes them to devices and channels,
/// ``LiveActivityLifecycle`` starts, ends, expires activities and deletes their channels. This
/// registers their job kinds and hands them the queue once it exists.
///
/// Every job checks the activity's state first, so a job run twice (a lease that expired after
/// the work) or a cancelled activity sends nothing more: one start and one end per activity.
public final class LiveActivityJobs: Sendable {
    public let acceptor: LiveActivityAcceptor
    let sender: LiveActivitySender
    let lifecycle: LiveActivityLifecycle
    let parts: LiveActivityParts

    public var store: LiveActivityStore { parts.store }
    public var clients: APNSClientProvider { parts.clients }
    public var channels: any LiveActivityChannels { parts.channels }
    public var clock: any HeraldClock { parts.clock }

    public init(
        store: LiveActivityStore,
        users: any LiveActivityUserDirectory,
        clients: APNSClientProvider,
        channels: any LiveActivityChannels,
        clock: any HeraldClock = SystemClock(),
        channelRetention: TimeInterval = 3_600,
        logger: Logger = Logger(label: "herald.live-activities"),
        metrics: MetricsRegistry = .shared,
        events: (any LiveActivityEvents)? = nil
    ) {
        let parts = LiveActivityParts(
            store: store,
            users: users,
            clients: clients,
            channels: channels,
            clock: clock,
            channelRetention: channelRetention,
            logger: logger,
            metrics: LiveActivityMetrics(registry: metrics),
            attached: AttachedJobQueue(),
            events: events,
            fanOut: APNSFanOut(maximumInFlight: 256, clock: clock)
        )
        self.parts = parts
        acceptor = LiveActivityAcceptor(parts: parts)
        sender = LiveActivitySender(parts: parts)
        lifecycle = LiveActivityLifecycle(parts: parts, sender: sender, acceptor: acceptor)
    }

    /// The queue follow-up jobs go to (the queue is made after the handlers are registered).
    public func attach(_ queue: JobQueue) {
        parts.attached.attach(queue)
    }

    /// Registers every Live Activities job kind.
    public func register(on handlers: inout JobHandlers) {
        let options = JobKindOptions(maxAttempts: 20, retryBase: 2, retryMaximum: 300)
        let (sender, lifecycle) = (sender, lifecycle)
        handlers.register(LiveActivityJobKind.start, options: options) { job in
            try await lifecycle.start(try LiveActivityJob(job), attempt: job.attempts, options: options)
        }
        handlers.register(LiveActivityJobKind.send, options: options) { job in
            let payload = try LiveActivitySendJob(json: try LiveActivityStore.value(job.payload))
            return try await sender.route(payload.sends, attempt: job.attempts, options: options)
        }
        handlers.register(LiveActivityJobKind.scheduledEnd, options: options) { job in
            try await lifecycle.scheduledEnd(try LiveActivityJob(job).id)
        }
        handlers.register(LiveActivityJobKind.expire, options: options) { job in
            try await lifecycle.expire(try LiveActivityJob(job).id)
        }
        handlers.register(LiveActivityJobKind.deleteChannel, options: options) { job in
            try await lifecycle.deleteChannel(try LiveActivityJob(job))
        }
    }
}

/// The payload of the Live Activities jobs other than `live_activity.send`:
/// `{"id", "tokens"?, "round"?, "channel"?}`.
struct LiveActivityJob: Sendable, Hashable {
    var id: UUID
    /// A `live_activity.start` after the activity started: only these push-to-start tokens, which
    /// APNs did not take (429, 5xx, no connection) while it took others.
    var tokens: [String]? = nil
    /// Which such job of the activity this is (1, 2, …): each names its own unique key.
    var round: Int? = nil
    /// A `live_activity.delete_channel` for a channel the activity does not hold: one made for a
    /// create that another with the same id and body beat to the insert.
    var channel: String? = nil

    /// A job of `kind` for this payload, at most one of that kind (and round) per activity.
    func newJob(_ kind: String, at dueAt: Date? = nil) throws -> NewJob {
        NewJob(
            kind: kind,
            payload: try LiveActivityStore.text(json),
            dueAt: dueAt,
            uniqueKey: "\(kind):\(LiveActivityID.text(id))" + (round.map { ":\($0)" } ?? "")
        )
    }
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

    /// The `live_activity.send` jobs of these sends: one, unless its payload would be over the
    /// queue's limit (a batch of updates near the 4 KB content limit), then halves until each fits.
    static func jobs(_ sends: [LiveActivitySend], at dueAt: Date? = nil) throws -> [NewJob] {
        let payload = try LiveActivityStore.text(LiveActivitySendJob(sends: sends).json)
        if payload.utf8.count > JobQueue.maximumPayloadBytes, sends.count > 1 {
            let half = sends.count / 2
            return try jobs(Array(sends[..<half]), at: dueAt) + jobs(Array(sends[half...]), at: dueAt)
        }
        return [NewJob(kind: LiveActivityJobKind.send, payload: payload, dueAt: dueAt)]
    }
}

/// The job queue, attached after the jobs are made (the queue needs their handlers).
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
