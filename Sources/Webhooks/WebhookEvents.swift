import Foundation
public import HeraldCore
public import Jobs
public import Storage
import Synchronization

/// Records events for the webhooks subscribed to them: one outbox row per (webhook, event) and a
/// `webhook.deliver` job per webhook, in the caller's transaction, so an event is durable exactly
/// when the change it reports is.
///
/// ```swift
/// let events = WebhookEvents(store: WebhookStore(database: db))
/// // ... build the JobQueue with WebhookDeliverer registered, then:
/// events.attach(queue)
/// try await db.transaction { tx in
///     // the change itself, then
///     try await events.record([.deviceInvalidated(token: t, app: a, environment: "production",
///                                                 reason: "Unregistered", invalidAt: at, at: now)], on: tx)
/// }
/// events.committed()
/// ```
///
/// The queue is attached after construction because the queue's handlers (notification sends)
/// need the stores that report to this object.
public final class WebhookEvents: Sendable {
    public let store: WebhookStore
    public let configuration: WebhookConfiguration
    private let attachedQueue = AttachedJobQueue()
    let logger: Logger

    public init(
        store: WebhookStore,
        configuration: WebhookConfiguration = WebhookConfiguration(),
        logger: Logger = Logger(label: "herald.webhooks")
    ) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
    }

    /// The queue delivery jobs go to; call once, before events are recorded.
    public func attach(_ queue: JobQueue) {
        attachedQueue.attach(queue)
    }

    private func queue() throws -> JobQueue {
        guard let queue = attachedQueue.queue else {
            throw JobError(.invalid, "webhook events were recorded before a job queue was attached")
        }
        return queue
    }

    /// Records `events` in their own transaction and wakes the worker.
    public func record(_ events: [WebhookEvent]) async throws {
        try await store.database.transaction { tx in try await self.record(events, on: tx) }
        committed()
    }

    /// Records `events` for every webhook subscribed to their types, inside the caller's
    /// transaction. Call ``committed()`` after the commit.
    public func record(_ events: [WebhookEvent], on executor: any DatabaseExecutor) async throws {
        guard !events.isEmpty else { return }
        let subscribers = try await store.subscribers(on: executor)
        var rows: [(webhook: UUID, event: WebhookEvent)] = []
        var webhooks: [UUID] = []
        for subscriber in subscribers {
            let matching = events.filter { subscriber.events.contains($0.type) }
            guard !matching.isEmpty else { continue }
            webhooks.append(subscriber.id)
            rows += matching.map { (subscriber.id, $0) }
        }
        guard !rows.isEmpty else { return }
        try await store.insertOutbox(rows, on: executor)
        let queue = try queue()
        for webhook in webhooks {
            try await scheduleDelivery(webhook, queue: queue, on: executor)
        }
    }

    /// Records `event` for `webhook` alone, whatever it subscribes to (a test event), and wakes
    /// the worker. Answers `false`, recording nothing, when there is no such webhook.
    func send(_ event: WebhookEvent, to webhook: UUID) async throws -> Bool {
        let queue = try queue()
        let recorded = try await store.database.transaction { tx -> Bool in
            guard try await tx.queryFirst("SELECT id FROM webhooks WHERE id = $1", [SQLValue(webhook)]) != nil else {
                return false
            }
            try await self.store.insertOutbox([(webhook, event)], on: tx)
            try await self.scheduleDelivery(webhook, queue: queue, on: tx)
            return true
        }
        if recorded { committed() }
        return recorded
    }

    /// Tells this process's job worker that delivery jobs may have been added (PostgreSQL's
    /// `NOTIFY` tells every instance on commit; SQLite needs this).
    public func committed() {
        attachedQueue.queue?.wake()
    }

    /// Makes sure a delivery job will read the webhook's outbox after this transaction commits.
    ///
    /// A pending job due within the batching window is joined (its claim of the outbox waits for
    /// this transaction: ``WebhookStore/subscribers(on:)``); a running one may have read the
    /// outbox already, so a follow-up job keyed after it is added, one per running job.
    func scheduleDelivery(_ webhook: UUID, queue: JobQueue, on executor: any DatabaseExecutor) async throws {
        let base = "\(WebhookJobKind.deliver):\(RequestIdentifier.lowercaseString(webhook))"
        var key = base
        for _ in 0..<8 {
            let enqueued = try await queue.enqueue(
                NewJob(
                    kind: WebhookJobKind.deliver,
                    payload: WebhookDeliverer.payload(for: webhook),
                    dueAt: store.clock.now().addingTimeInterval(configuration.batchWindow),
                    uniqueKey: key
                ),
                on: executor
            )
            if enqueued.inserted || enqueued.job.status == .pending { return }
            key = "\(base):after:\(RequestIdentifier.lowercaseString(enqueued.job.id))"
        }
        throw JobError(.conflict, "could not schedule the delivery of a webhook event; retry")
    }
}

/// The job kinds the webhooks module registers.
public enum WebhookJobKind {
    /// Delivers one webhook's due events, in batches.
    public static let deliver = "webhook.deliver"
}
