import APNs
public import Foundation
import HeraldCore
import Jobs
import Storage

/// An update or end waiting for the batch that accepts it.
struct LiveActivityAcceptance: Sendable {
    var id: UUID
    var update: LiveActivityUpdate
    /// An end without `content_state` ends with the latest content.
    var keepContent: Bool
    /// Why an end ends the activity, for its `live_activity.ended` event.
    var reason: LiveActivityEndReason = .api
}

/// Accepts updates and ends: each is stamped and stored as its activity's latest, with the
/// `live_activity.send` job that ``LiveActivitySender`` runs, in one transaction.
public final class LiveActivityAcceptor: LiveActivityPart {
    let parts: LiveActivityParts
    /// Updates and ends accepted at the same time: one transaction and one send job a batch.
    private let accepts: GroupCommit<LiveActivityAcceptance, LiveActivityRouteCounts>

    init(parts: LiveActivityParts) {
        self.parts = parts
        accepts = GroupCommit(maximumBatch: 256) { batch in
            try await Self.accept(
                batch,
                store: parts.store,
                queue: try parts.attached.attachedQueue,
                events: parts.events,
                now: parts.clock.now()
            )
        }
    }

    /// Accepts an update or end: takes its timestamp (strictly after the last), stores it as the
    /// latest, ends the activity for an end, and commits the `live_activity.send` job in the same
    /// transaction, so a 202 is never lost. Returns how many pushes it will take, by route.
    ///
    /// Updates accepted at the same time share one transaction (``GroupCommit``): each waits for
    /// the commit of its batch.
    ///
    /// - Parameters:
    ///   - keepContent: an end without `content_state` ends with the latest content.
    ///   - reason: why an end ends the activity (its `live_activity.ended` event says so).
    /// - Throws: ``LiveActivityError`` not found, or conflict when the activity is not running.
    public func accept(
        _ update: LiveActivityUpdate,
        for id: UUID,
        keepContent: Bool = false,
        reason: LiveActivityEndReason = .api
    ) async throws -> LiveActivityRouteCounts {
        _ = try queue
        let routes = try await accepts.submit(
            LiveActivityAcceptance(id: id, update: update, keepContent: keepContent, reason: reason)
        )
        metrics.accepted.increment(labels: [("event", update.event.rawValue)])
        return routes
    }

    /// Accepts a batch in one transaction: locks its activities, stamps each update in order
    /// (several for one activity get increasing timestamps), stores each activity's latest,
    /// commits one send job for all the batch's updates and counts the routes. An activity that is
    /// missing or not running fails only its own updates.
    static func accept(
        _ batch: [LiveActivityAcceptance],
        store: LiveActivityStore,
        queue: JobQueue,
        events: (any LiveActivityEvents)? = nil,
        now: Date
    ) async throws -> [Result<LiveActivityRouteCounts, any Error>] {
        let results = try await withDatabaseCancellationIgnored {
            try await store.database.transaction { tx -> [Result<LiveActivityRouteCounts, any Error>] in
                var heads = try await store.heads(Array(Set(batch.map(\.id))), locking: true, on: tx)
                var latest: [UUID: LiveActivityStamp] = [:]
                var order: [UUID] = []
                var sends: [LiveActivitySend] = []
                var outcomes: [Result<UUID, any Error>] = []
                var ended: [LiveActivityEvent] = []
                for item in batch {
                    guard var head = heads[item.id] else {
                        outcomes.append(.failure(LiveActivityError.notFound))
                        continue
                    }
                    guard head.state == .started else {
                        outcomes.append(.failure(LiveActivityError.notStarted(head.state)))
                        continue
                    }
                    if item.update.expiration != nil, head.channelStoragePolicy != 1 {
                        outcomes.append(
                            .failure(
                                LiveActivityError.invalid(
                                    "expiration_not_stored",
                                    "expiration applies to a broadcast channel Herald created with storage_policy 1: "
                                        + "this activity's updates are not stored by APNs, leave it out",
                                    field: "expiration"
                                )
                            )
                        )
                        continue
                    }
                    var update = item.update
                    if item.keepContent {
                        update.contentState =
                            try latest[item.id]?.latest.contentState
                            ?? LiveActivityStore.value(head.contentStateJSON)
                    }
                    update.timestamp = max(EpochTime.seconds(now), head.lastTimestamp + 1)
                    head.lastTimestamp = update.timestamp
                    if update.event == .end {
                        head.state = .ended
                        ended.append(
                            LiveActivityEvent(
                                .ended(item.reason),
                                id: item.id,
                                app: head.app,
                                environment: head.environment,
                                attributesType: head.attributesType,
                                at: now
                            )
                        )
                    }
                    heads[item.id] = head
                    if latest[item.id] == nil { order.append(item.id) }
                    latest[item.id] = LiveActivityStamp(
                        id: item.id,
                        latest: update,
                        ends: update.event == .end || latest[item.id]?.ends == true
                    )
                    sends.append(LiveActivitySend(id: item.id, update: update))
                    outcomes.append(.success(item.id))
                }
                guard !order.isEmpty else { return outcomes.map { $0.map { _ in LiveActivityRouteCounts() } } }
                try await store.store(order.compactMap { latest[$0] }, now: now, on: tx)
                _ = try await queue.enqueue(contentsOf: try LiveActivitySendJob.jobs(sends), on: tx)
                if let events, !ended.isEmpty { try await events.liveActivitiesChanged(ended, on: tx) }
                let perDevice = order.filter { heads[$0]?.channelID == nil }
                let instances = try await store.routeInstances(of: perDevice, on: tx)
                return outcomes.map { outcome in
                    outcome.map { id in
                        heads[id]?.channelID != nil
                            ? LiveActivityRouteCounts(broadcast: 1) : routes((instances[id] ?? []).map(\.instance))
                    }
                }
            }
        }
        queue.wake()
        if batch.contains(where: { $0.update.event == .end }) { events?.liveActivityEventsCommitted() }
        return results
    }

    /// The route each instance takes now.
    static func routes(_ instances: [LiveActivityInstance]) -> LiveActivityRouteCounts {
        var routes = LiveActivityRouteCounts()
        if instances.isEmpty { routes.pending = 1 }
        for instance in instances where instance.state == .active {
            if instance.updateToken != nil {
                routes.updateToken += 1
            } else if instance.deviceToken != nil, !instance.unreachable {
                routes.silent += 1
            }
        }
        return routes
    }
}
