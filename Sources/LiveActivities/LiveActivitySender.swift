import APNs
import APNsTransport
import Foundation
import HeraldCore
import Jobs
import Storage

/// Sends the updates and ends a batch accepted (the `live_activity.send` job): routes each to
/// its channel, its instances' update tokens or, without one, a silent push to their devices, and
/// records what APNs answered. Its delivery rows also record the push-to-start
/// (``LiveActivityLifecycle``).
struct LiveActivitySender: LiveActivityPart {
    let parts: LiveActivityParts

    /// A push that routing an update sends.
    struct Outgoing: Sendable {
        enum Push: Sendable {
            case device(APNSRequest)
            case broadcast(APNSBroadcastRequest)
        }

        var push: Push
        var client: APNSClient
        var bundleID: String
        /// The update's index in the job's sends.
        var send: Int
        var route: LiveActivityRoute
        var token: String
        var instance: LiveActivityInstance?
    }

    /// Sends the updates and ends one batch accepted, all at once: for each, one broadcast on a
    /// channel; else, per instance, a `liveactivity` push to its update token, or a silent push to
    /// its device token. A dead update token is dropped and the same update goes by silent push at
    /// once; a dead device token makes the instance unreachable. Without instances nothing is sent:
    /// the update stays the latest, and an instance registering later receives it.
    ///
    /// What it found is written in one transaction. When APNs did not take some pushes (429, 5xx,
    /// no connection), only their updates are tried again: the whole job when it is all of them,
    /// else a new job of those updates with the attempts this one has left. Instances that
    /// received an update are not sent it again.
    func route(_ sends: [LiveActivitySend], attempt: Int, options: JobKindOptions) async throws -> JobOutcome {
        let ids = Array(Set(sends.map(\.id)))
        let (heads, instances) = try await withDatabaseCancellationIgnored {
            (
                try await store.heads(ids, locking: false, on: store.database),
                try await store.routeInstances(of: ids, on: store.database)
            )
        }
        var writes = sends.map { LiveActivityRouteWrite(id: $0.id, timestamp: $0.update.timestamp) }
        var again = Set<Int>()
        var outgoing: [Outgoing] = []
        for (index, send) in sends.enumerated() {
            guard let head = heads[send.id], head.state == .started || head.state == .ended else { continue }
            do {
                outgoing += try plan(send, index: index, head: head, instances: instances[send.id] ?? [])
            } catch {
                logger.warning(
                    "cannot route a Live Activity update yet",
                    metadata: ["live_activity_id": .string(LiveActivityID.text(send.id)), "error": .string("\(error)")]
                )
                again.insert(index)
            }
        }
        let fallbacks = try deliver(
            outgoing,
            try await parts.fanOut.send(outgoing) { try await $0.send() },
            sends: sends,
            writes: &writes,
            again: &again
        )
        _ = try deliver(
            fallbacks,
            try await parts.fanOut.send(fallbacks) { try await $0.send() },
            sends: sends,
            writes: &writes,
            again: &again
        )

        // The deletions of the channels Herald made for the activities this ended, written with
        // what the end did, so that a crash in between cannot leave a channel behind.
        let deletions = try Set(
            sends.indices.compactMap { index -> UUID? in
                let send = sends[index]
                guard send.update.event == .end, heads[send.id]?.channelCreated == true, !again.contains(index)
                else { return nil }
                return send.id
            }
        ).map { id in
            try LiveActivityJob(id: id).newJob(
                LiveActivityJobKind.deleteChannel,
                at: clock.now().addingTimeInterval(channelRetention)
            )
        }
        let retries = try retryJobs(sends, again: again, attempt: attempt, options: options)
        let followUps = retries + deletions
        let written = writes.filter { !$0.deliveries.isEmpty }
        if !written.isEmpty || !followUps.isEmpty {
            let queue = followUps.isEmpty ? nil : try queue
            try await withDatabaseCancellationIgnored {
                try await store.database.transaction { tx in
                    try await self.store.record(written, now: self.clock.now(), on: tx)
                    if let queue { _ = try await queue.enqueue(contentsOf: followUps, on: tx) }
                }
            }
            queue?.wake()
        }
        if !again.isEmpty, retries.isEmpty { return .retry(reason: "APNs did not take every push of the update yet") }
        return .done
    }

    /// The job that tries again the updates of a batch APNs did not take while it took others:
    /// due after the kind's backoff, with the attempts this one has left. None when every update
    /// or none is to be tried again, or on the last attempt: the job itself retries, is done, or
    /// is dead (and `herald jobs retry` sends only what the instances did not receive).
    private func retryJobs(
        _ sends: [LiveActivitySend],
        again: Set<Int>,
        attempt: Int,
        options: JobKindOptions
    ) throws -> [NewJob] {
        guard !again.isEmpty, again.count < sends.count, attempt < options.maxAttempts else { return [] }
        let delay = options.retryDelay(afterAttempt: attempt, jitter: Double.random(in: 0.5...1))
        var jobs = try LiveActivitySendJob.jobs(
            again.sorted().map { sends[$0] },
            at: clock.now().addingTimeInterval(delay)
        )
        for index in jobs.indices { jobs[index].maxAttempts = max(1, options.maxAttempts - attempt) }
        return jobs
    }

    /// The pushes of one update: the broadcast on its channel, or the update-token pushes of its
    /// instances, then the silent ones.
    private func plan(
        _ send: LiveActivitySend,
        index: Int,
        head: LiveActivityHead,
        instances: [LiveActivityRouteInstance]
    ) throws -> [Outgoing] {
        let app = try app(head.app)
        let client = try clients.client(for: app, environment: head.environment)
        let update = send.update
        let priority: APNSPriority = update.priority == 5 ? .consideringDevicePower : .immediately
        if let channel = head.channelID {
            let request = APNSBroadcastRequest(
                bundleID: app.bundleID,
                channelID: APNSChannelID(rawValue: channel),
                storagePolicy: head.channelStoragePolicy == 1 ? .mostRecentMessageStored : .noMessageStored,
                payload: try Self.liveActivityPayload(update),
                // Only a channel that stores the latest message takes anything but 0.
                expiration: head.channelStoragePolicy == 1 ? Self.expiration(update.expiration) : .immediately,
                priority: priority
            )
            return [
                Outgoing(
                    push: .broadcast(request),
                    client: client,
                    bundleID: app.bundleID,
                    send: index,
                    route: .broadcast,
                    token: channel
                )
            ]
        }
        // An instance first reported after this update was accepted has a catch-up job of its own
        // for the activity's latest update: the update's own job leaves it to that job.
        let targets = instances.filter { target in
            guard target.instance.state == .active, target.sentTimestamp < update.timestamp else { return false }
            if let only = send.instance { return target.instance.activityID == only }
            return target.registeredAfter < update.timestamp
        }.map(\.instance)
        let withToken = targets.filter { $0.updateToken != nil }
        var outgoing: [Outgoing] = []
        if !withToken.isEmpty {
            let payload = try Self.liveActivityPayload(update)
            for instance in withToken {
                let token = instance.updateToken ?? ""
                let request = APNSRequest(
                    deviceToken: token,
                    pushType: .liveActivity,
                    topic: .bundleID(app.bundleID),
                    payload: payload,
                    priority: priority
                )
                outgoing.append(
                    Outgoing(
                        push: .device(request),
                        client: client,
                        bundleID: app.bundleID,
                        send: index,
                        route: .updateToken,
                        token: token,
                        instance: instance
                    )
                )
            }
        }
        for instance in targets
        where instance.updateToken == nil && instance.deviceToken != nil && !instance.unreachable {
            outgoing.append(try silent(send, index: index, to: instance, bundleID: app.bundleID, client: client))
        }
        return outgoing
    }

    /// The silent push of `send` to the instance's device token.
    private func silent(
        _ send: LiveActivitySend,
        index: Int,
        to instance: LiveActivityInstance,
        bundleID: String,
        client: APNSClient
    ) throws -> Outgoing {
        let token = instance.deviceToken ?? ""
        let request = APNSRequest(
            deviceToken: token,
            pushType: .background,
            topic: .bundleID(bundleID),
            payload: try Self.silentPayload(send.update, id: send.id, activityID: instance.activityID),
            priority: .consideringDevicePower
        )
        return Outgoing(
            push: .device(request),
            client: client,
            bundleID: bundleID,
            send: index,
            route: .silent,
            token: token,
            instance: instance
        )
    }

    /// Notes each result in its update's write and the updates to try again; returns the silent
    /// pushes that replace update-token pushes APNs called dead.
    private func deliver(
        _ outgoing: [Outgoing],
        _ answers: [APNSPushAnswer],
        sends: [LiveActivitySend],
        writes: inout [LiveActivityRouteWrite],
        again: inout Set<Int>
    ) throws -> [Outgoing] {
        var fallbacks: [Outgoing] = []
        for (push, answer) in zip(outgoing, answers) {
            let event = sends[push.send].update.event.rawValue
            writes[push.send].deliveries.append(record(answer, event: event, route: push.route, token: push.token))
            switch answer.outcome {
            case .sent:
                if let instance = push.instance { writes[push.send].received.append(instance.activityID) }
            case .rejected: break
            case .retry, .cancelled: again.insert(push.send)
            case .dead:
                guard let instance = push.instance else { break }
                if push.route == .updateToken {
                    writes[push.send].droppedUpdateTokens.append((instance.activityID, push.token))
                    if instance.deviceToken != nil, !instance.unreachable {
                        fallbacks.append(
                            try silent(
                                sends[push.send],
                                index: push.send,
                                to: instance,
                                bundleID: push.bundleID,
                                client: push.client
                            )
                        )
                    }
                } else {
                    writes[push.send].unreachable.append((instance.activityID, push.token))
                }
            }
        }
        return fallbacks
    }

    // MARK: Payloads

    static func liveActivityPayload(_ update: LiveActivityUpdate) throws -> [UInt8] {
        try APNSLiveActivityPayload(
            event: update.event == .end ? .end : .update,
            timestamp: Date(timeIntervalSince1970: TimeInterval(update.timestamp)),
            contentState: update.contentState,
            alert: update.alert?.apns,
            staleDate: update.staleDate.map { Date(timeIntervalSince1970: TimeInterval($0)) },
            dismissalDate: update.dismissalDate.map { Date(timeIntervalSince1970: TimeInterval($0)) },
            relevanceScore: update.relevanceScore
        ).encodedPayload()
    }

    /// An update's `expiration` as APNs takes it: `0` (or none) is "now or never".
    static func expiration(_ seconds: Int64?) -> APNSExpiration {
        guard let seconds, seconds > 0 else { return .immediately }
        return .at(Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    /// The silent push the app applies itself: exactly `{"aps": {"content-available": 1},
    /// "live-activity": {"id", "activity-id", "event", "content-state", "timestamp", "stale-date"?,
    /// "dismissal-date"?, "alert"?: {"title", "body"}}}`. A background push cannot alert, so the
    /// update's alert rides inside `live-activity`, for the app to show as a local notification.
    static func silentPayload(_ update: LiveActivityUpdate, id: UUID, activityID: String) throws -> [UInt8] {
        var live: [String: APNSJSONValue] = [
            "id": .string(LiveActivityID.text(id)), "activity-id": .string(activityID),
            "event": .string(update.event.rawValue), "content-state": update.contentState,
            "timestamp": .integer(update.timestamp),
        ]
        if let stale = update.staleDate { live["stale-date"] = .integer(stale) }
        if let dismissal = update.dismissalDate { live["dismissal-date"] = .integer(dismissal) }
        if let alert = update.alert {
            live["alert"] = .object(["title": .string(alert.title), "body": .string(alert.body)])
        }
        let payload: APNSJSONValue = .object([
            "aps": .object(["content-available": .integer(1)]), "live-activity": .object(live),
        ])
        return try payload.encodedPayload()
    }

    // MARK: Sending

    /// The delivery row of a result, counted in `/metrics`.
    func record(
        _ answer: APNSPushAnswer,
        event: String,
        route: LiveActivityRoute,
        token: String
    ) -> LiveActivityDelivery {
        var delivery = LiveActivityDelivery(
            at: clock.now(),
            event: event,
            route: route,
            token: token,
            status: nil,
            reason: nil,
            apnsID: nil
        )
        let label: String
        switch answer.result {
        case .success(.delivered(let answer)):
            delivery.status = 200
            delivery.apnsID = answer.apnsID.map { $0.uuidString.lowercased() }
            label = "delivered"
        case .success(.rejected(let rejection)):
            delivery.status = rejection.status
            delivery.reason = rejection.reason.rawValue
            label = rejection.isDeviceTokenInvalid ? "dead_token" : "rejected"
        case .failure(let error):
            delivery.reason = String(String(describing: error).prefix(200))
            label = "error"
        }
        metrics.deliveries.increment(labels: [("route", route.rawValue), ("result", label)])
        return delivery
    }
}

extension LiveActivitySender.Outgoing {
    func send() async throws -> APNSSendResult {
        switch push {
        case .device(let request): try await client.send(request)
        case .broadcast(let request): try await client.send(request)
        }
    }
}
