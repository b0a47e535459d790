public import APNs
import APNsTransport
import Audiences
public import Devices
public import Foundation
public import HeraldCore
public import Jobs
import Storage

/// Creates, reads and cancels notifications; the `notification.send` job sends them.
///
/// ```swift
/// let store = NotificationStore(database: db)
/// let sender = NotificationSender(store: store, clients: clients)
/// var handlers = JobHandlers()
/// NotificationService.register(sender, on: &handlers)
/// let queue = JobQueue(database: db, handlers: handlers)
/// let service = NotificationService(queue: queue, sender: sender)
/// let created = try await service.create(try NotificationRequest.parse(body, now: Date()))
/// ```
public struct NotificationService: Sendable {
    let store: NotificationStore
    let queue: JobQueue
    let sender: NotificationSender
    var clients: APNSClientProvider { sender.clients }
    /// How long a `?wait=true` notification's backup job waits before it sends what the request
    /// could not (the instance died mid-send).
    public var waitBackupDelay: TimeInterval = 300
    let metrics: NotificationMetrics
    let logger: Logger

    public init(
        queue: JobQueue,
        sender: NotificationSender,
        metrics: MetricsRegistry = .shared,
        logger: Logger = Logger(label: "herald.notifications")
    ) {
        self.store = sender.store
        self.queue = queue
        self.sender = sender
        self.metrics = NotificationMetrics(registry: metrics)
        self.logger = logger
    }

    /// The retry schedule of `notification.send`: APNs asks to back off on 429 and 5xx.
    public static let jobOptions = JobKindOptions(maxAttempts: 6, retryBase: 15, retryMaximum: 900)

    /// Registers the `notification.send` handler.
    public static func register(
        _ sender: NotificationSender,
        on handlers: inout JobHandlers,
        options: JobKindOptions = jobOptions
    ) {
        handlers.register(
            NotificationJobKind.send,
            options: options,
            onGiveUp: { job, reason in await sender.giveUp(job, reason: reason) }
        ) { job in
            try await sender.run(job)
        }
    }

    /// The time by the clock the service schedules with: what `send_at` is checked against.
    public func now() -> Date {
        queue.clock.now()
    }

    // MARK: Creating

    /// Stores the notification, its tokens and its send job in one transaction; it is durable
    /// when this returns.
    ///
    /// - Throws: ``NotificationError`` for an unknown app or environment, database errors.
    public func create(_ request: NotificationRequest) async throws -> StoredNotification {
        try await create(request, jobDelay: nil, mode: request.sendAt == nil ? "immediate" : "scheduled")
    }

    /// A notification sent while the caller waits, with its results.
    public struct WaitResult: Sendable {
        public var notification: StoredNotification
        public var counts: DeliveryCounts
        public var results: [DeliveryResult]
    }

    /// Stores the notification (with a backup job for a crash mid-send), sends it now and returns
    /// every token's result.
    ///
    /// - Throws: ``NotificationError`` (invalid) with more than
    ///   ``NotificationLimits/maximumWaitTokens`` tokens or a `send_at`.
    public func createAndWait(_ request: NotificationRequest) async throws -> WaitResult {
        guard request.sendAt == nil else {
            throw NotificationError.invalid(
                "wait_with_send_at",
                "wait=true sends now: remove send_at, or drop wait=true to schedule",
                field: "send_at"
            )
        }
        guard !request.audience.isResolvedAtSend else {
            throw NotificationError.invalid(
                "wait_with_audience",
                "wait=true needs the tokens listed: an audience of users, tags or all is resolved when the send "
                    + "runs; drop wait=true and read the progress with GET /v1/notifications/{id}",
                field: "audience"
            )
        }
        guard request.tokens.count <= NotificationLimits.maximumWaitTokens else {
            throw NotificationError.invalid(
                "too_many_tokens_to_wait",
                "wait=true allows at most \(NotificationLimits.maximumWaitTokens) tokens, not "
                    + "\(request.tokens.count): drop wait=true and read the results with GET /v1/notifications/{id}",
                field: "tokens"
            )
        }
        let created = try await create(request, jobDelay: waitBackupDelay, mode: "wait")
        do {
            _ = try await sender.send(created.id, isLastAttempt: false)
            var notification = try await store.notification(id: created.id) ?? created
            if notification.status == .done || notification.status == .failed, let jobID = notification.jobID {
                // The backup job is not needed any more: deleted, not cancelled, so that a send
                // with wait=true leaves no job behind. Best effort: left, it would find nothing to send.
                let store = self.store
                let queue = self.queue
                let discarded = try? await queue.database.transaction { tx in
                    guard try await queue.discard(id: jobID, on: tx) else { return false }
                    try await store.clearJob(created.id, on: tx)
                    return true
                }
                if discarded == true { notification.jobID = nil }
            }
            let results = try await store.deliveries(
                id: created.id,
                limit: NotificationLimits.maximumWaitTokens,
                cursor: nil
            )
            return WaitResult(
                notification: notification,
                counts: try await store.counts(id: created.id),
                results: results.items
            )
        } catch {
            throw WaitInterrupted(notification: created, underlying: error)
        }
    }

    /// A `?wait=true` send whose notification is committed but whose wait ended before every
    /// result was read (the database or the request failed midway). Its backup job finishes the
    /// send, so the caller answers as for a send without waiting (202) rather than with an error a
    /// client would retry into a second notification.
    public struct WaitInterrupted: Error, Sendable, CustomStringConvertible {
        public let notification: StoredNotification
        public let underlying: any Error

        public var description: String {
            "the wait for notification \(RequestIdentifier.lowercaseString(notification.id)) ended early: \(underlying)"
        }
    }

    private func create(
        _ request: NotificationRequest,
        jobDelay: TimeInterval?,
        mode: String
    ) async throws
        -> StoredNotification
    {
        let (app, environment) = try clients.resolve(app: request.app, environment: request.environment)
        let now = queue.clock.now()
        let id = ResourceIdentifier.next()
        let sendAt = max(request.sendAt ?? now, now)
        let store = self.store
        let queue = self.queue
        let notification = try await queue.database.transaction { tx in
            let job = try await queue.enqueue(
                NewJob(
                    kind: NotificationJobKind.send,
                    payload: NotificationSender.payload(for: id),
                    dueAt: jobDelay.map { now.addingTimeInterval($0) } ?? sendAt,
                    uniqueKey: "notification:\(RequestIdentifier.lowercaseString(id))"
                ),
                on: tx
            )
            var notification = StoredNotification(
                id: id,
                app: app.bundleID,
                environment: environment,
                pushType: request.pushType,
                topic: request.topic ?? request.pushType.topic(forBundleID: app.bundleID),
                priority: request.priority,
                expiration: request.expiration,
                collapseID: request.effectiveCollapseID(notificationID: id),
                payload: String(decoding: request.payload, as: UTF8.self),
                sendAt: sendAt,
                status: .scheduled,
                tokenCount: request.tokens.count,
                failureReason: nil,
                jobID: job.job.id,
                createdAt: now,
                updatedAt: now
            )
            notification.audienceKind = request.audience.kind
            let resolvedLater = request.audience.isResolvedAtSend
            notification.audienceResolvedAt = resolvedLater ? nil : now
            try await store.insert(
                notification,
                tokens: request.tokens,
                audience: resolvedLater ? request.audience : nil,
                on: tx
            )
            return notification
        }
        queue.wake()
        metrics.accepted.increment(labels: [("mode", mode)])
        metrics.acceptedTokens.increment(by: Double(request.tokens.count))
        logger.info(
            "notification accepted",
            metadata: [
                "notification": .string(RequestIdentifier.lowercaseString(id)), "app": .string(app.bundleID),
                "environment": .string(environment.rawValue), "tokens": .int(request.tokens.count),
                "audience": .string(request.audience.kind.rawValue),
                "send_at": .string(RFC3339.string(from: sendAt)),
            ]
        )
        return notification
    }

    // MARK: Reading and cancelling

    /// A notification with its counts and one page of results.
    public struct Details: Sendable {
        public var notification: StoredNotification
        public var counts: DeliveryCounts
        public var results: Page<DeliveryResult>
        /// The audience of a notification sent to users, tags or all (`nil` for tokens: they are
        /// its results), with how far the registry has been read.
        public var audience: AudienceState?
    }

    /// - Throws: ``NotificationError`` (not found) for an unknown id.
    public func details(id: UUID, limit: Int, cursor: String?) async throws -> Details {
        guard let notification = try await store.notification(id: id) else {
            throw NotificationError.notFound(RequestIdentifier.lowercaseString(id))
        }
        return Details(
            notification: notification,
            counts: try await store.counts(id: id),
            results: try await store.deliveries(id: id, limit: limit, cursor: cursor),
            audience: notification.audienceKind == .tokens ? nil : try await store.audienceState(id: id)
        )
    }

    /// Cancels a notification that has not started sending.
    ///
    /// - Throws: ``NotificationError``: not found for an unknown id, conflict when it is sending or finished.
    public func cancel(id: UUID) async throws -> StoredNotification {
        let now = queue.clock.now()
        let store = self.store
        // The notification and its tokens without a result are cancelled together.
        let outcome: (notification: StoredNotification, tokens: Int)? = try await queue.database.transaction { tx in
            guard let cancelled = try await store.transition(id, from: [.scheduled], to: .cancelled, at: now, on: tx)
            else { return nil }
            return (cancelled, try await store.cancelUnfinished(id, at: now, on: tx))
        }
        if let (cancelled, tokens) = outcome {
            store.finishObserver?.finishCommitted()
            if let jobID = cancelled.jobID { _ = try? await queue.cancel(id: jobID) }
            logger.info(
                "notification cancelled",
                metadata: ["notification": .string(RequestIdentifier.lowercaseString(id)), "tokens": .int(tokens)]
            )
            return cancelled
        }
        guard let current = try await store.notification(id: id) else {
            throw NotificationError.notFound(RequestIdentifier.lowercaseString(id))
        }
        throw NotificationError(
            .conflict,
            code: "not_cancellable",
            message: "the notification is \(current.status.rawValue): only a scheduled notification that has not "
                + "started sending can be cancelled",
            field: "id"
        )
    }

    /// How many of the notification's tokens are pending, sent, failed and so on.
    public func counts(id: UUID) async throws -> DeliveryCounts {
        try await store.counts(id: id)
    }

    /// Notifications newest first, filtered and keyset-paged (``NotificationStore/list(_:)``).
    public func list(_ query: NotificationListQuery) async throws -> Page<StoredNotification> {
        try await store.list(query)
    }

    /// Dead tokens (invalid devices of the registry), oldest record first.
    public func deadTokens(
        app: String?,
        environment: APNSEnvironment?,
        since: Date?,
        limit: Int,
        cursor: DeadTokenCursor?
    ) async throws -> Page<DeadToken> {
        let page = try await store.devices.deadTokens(
            app: app,
            environment: environment,
            since: since,
            limit: limit,
            cursor: cursor
        )
        return Page(items: page.items, nextCursor: page.nextCursor)
    }
}
