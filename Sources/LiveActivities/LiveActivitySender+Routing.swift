import APNs
public import Foundation
import HeraldCore
import Jobs
import Notifications
import Storage

extension LiveActivitySender {
    /// Accepts an update or end: takes its timestamp (strictly after the last), stores it as the
    /// latest, ends the activity for an end, and commits the `live_activity.send` job in the same
    /// transaction, so a 202 is never lost. Returns how many pushes it will take, by route.
    ///
    /// - Parameter keepContent: an end without `content_state` ends with the latest content.
    /// - Throws: ``LiveActivityError`` not found, or conflict when the activity is not running.
    public func accept(
        _ update: LiveActivityUpdate,
        for id: UUID,
        keepContent: Bool = false
    ) async throws -> LiveActivityRouteCounts {
        let queue = try queue
        let now = clock.now()
        let routes = try await store.database.transaction { tx -> LiveActivityRouteCounts in
            guard let activity = try await self.store.lockedActivity(id, on: tx) else {
                throw LiveActivityError.notFound
            }
            guard activity.state == .started else {
                throw LiveActivityError(
                    .conflict,
                    code: "not_started",
                    message:
                        "the activity is \(activity.state.rawValue): only a started activity takes updates and ends"
                )
            }
            var update = update
            if keepContent { update.contentState = activity.contentState }
            let stamped = try await self.store.stamp(update, of: activity, now: now, on: tx)
            if update.event == .end {
                _ = try await self.store.transition(id, from: [.started], to: .ended, at: now, on: tx)
            }
            _ = try await queue.enqueue(
                Self.job(LiveActivityJobKind.send, LiveActivityJob(id: id, update: stamped), unique: false),
                on: tx
            )
            if activity.channelID != nil { return LiveActivityRouteCounts(broadcast: 1) }
            return Self.routes(try await self.store.instances(of: id, on: tx))
        }
        queue.wake()
        metrics.accepted.increment(labels: [("event", update.event.rawValue)])
        return routes
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

    /// Sends an accepted update or end: one broadcast on a channel; else, per instance, a
    /// `liveactivity` push to its update token, or a silent push to its device token. A dead
    /// update token is dropped and the same update goes by silent push at once; a dead device
    /// token makes the instance unreachable. Without instances nothing is sent: the update stays
    /// the latest, and an instance registering later receives it.
    func route(_ id: UUID, _ update: LiveActivityUpdate, only instanceID: String?) async throws -> JobOutcome {
        guard let activity = try await store.activity(id) else { return .done }
        guard activity.state == .started || activity.state == .ended else { return .done }
        let app = try app(activity)
        let client = try clients.client(for: app, environment: activity.environment)
        let payload = try Self.liveActivityPayload(update)
        if let channel = activity.channelID {
            let result: Result<APNSSendResult, any Error>
            do {
                let request = APNSBroadcastRequest(
                    bundleID: app.bundleID,
                    channelID: APNSChannelID(rawValue: channel),
                    storagePolicy: .noMessageStored,
                    payload: payload,
                    expiration: .immediately,
                    priority: update.priority == 5 ? .consideringDevicePower : .immediately
                )
                result = .success(try await client.send(request))
            } catch {
                result = .failure(error)
            }
            try await store.record(
                [record(result, event: update.event.rawValue, route: .broadcast, token: channel)],
                of: id
            )
            if case .retryable = outcome(result) { return .retry(reason: "APNs did not take the broadcast yet") }
            if update.event == .end { try await scheduleChannelDeletion(id) }
            return .done
        }
        let sent = try await store.sentTimestamps(of: id)
        let instances = try await store.instances(of: id).filter {
            $0.state == .active && (instanceID == nil || $0.activityID == instanceID)
                && sent[$0.activityID, default: 0] < update.timestamp
        }
        var retry = false
        var deliveries: [LiveActivityDelivery] = []
        // The update-token pushes first, all at once; the silent ones after, including the fallbacks.
        let withToken = instances.filter { $0.updateToken != nil }
        var silent = instances.filter { $0.updateToken == nil && $0.deviceToken != nil && !$0.unreachable }
        let priority: APNSPriority = update.priority == 5 ? .consideringDevicePower : .immediately
        let results = await sendAll(
            withToken.map { instance in
                APNSRequest(
                    deviceToken: instance.updateToken ?? "",
                    pushType: .liveActivity,
                    topic: .bundleID(app.bundleID),
                    payload: payload,
                    priority: priority
                )
            },
            using: client
        )
        for (instance, result) in zip(withToken, results) {
            let token = instance.updateToken ?? ""
            deliveries.append(record(result, event: update.event.rawValue, route: .updateToken, token: token))
            switch outcome(result) {
            case .delivered: try await store.markSent(update.timestamp, of: id, activityID: instance.activityID)
            case .refused: break
            case .retryable: retry = true
            case .tokenInvalid:
                try await store.dropUpdateToken(token, of: id, activityID: instance.activityID, now: clock.now())
                if instance.deviceToken != nil, !instance.unreachable { silent.append(instance) }
            }
        }
        let silentRequests = try silent.map { instance in
            APNSRequest(
                deviceToken: instance.deviceToken ?? "",
                pushType: .background,
                topic: .bundleID(app.bundleID),
                payload: try Self.silentPayload(update, id: id, activityID: instance.activityID),
                priority: .consideringDevicePower
            )
        }
        let silentResults = await sendAll(silentRequests, using: client)
        for (instance, result) in zip(silent, silentResults) {
            let token = instance.deviceToken ?? ""
            deliveries.append(record(result, event: update.event.rawValue, route: .silent, token: token))
            switch outcome(result) {
            case .delivered: try await store.markSent(update.timestamp, of: id, activityID: instance.activityID)
            case .refused: break
            case .retryable: retry = true
            case .tokenInvalid:
                try await store.markUnreachable(token, of: id, activityID: instance.activityID, now: clock.now())
            }
        }
        try await store.record(deliveries, of: id)
        if retry { return .retry(reason: "APNs did not take every push of the update yet") }
        return .done
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

    /// The silent push the app applies itself: exactly `{"aps": {"content-available": 1},
    /// "live-activity": {"id", "activity-id", "event", "content-state", "timestamp", "stale-date"?,
    /// "dismissal-date"?}}`.
    static func silentPayload(_ update: LiveActivityUpdate, id: UUID, activityID: String) throws -> [UInt8] {
        var live: [String: APNSJSONValue] = [
            "id": .string(LiveActivityID.text(id)), "activity-id": .string(activityID),
            "event": .string(update.event.rawValue), "content-state": update.contentState,
            "timestamp": .integer(update.timestamp),
        ]
        if let stale = update.staleDate { live["stale-date"] = .integer(stale) }
        if let dismissal = update.dismissalDate { live["dismissal-date"] = .integer(dismissal) }
        let payload: APNSJSONValue = .object([
            "aps": .object(["content-available": .integer(1)]), "live-activity": .object(live),
        ])
        return try payload.encodedPayload()
    }

    // MARK: Sending

    /// What a push's result means for the route.
    enum SendOutcome {
        case delivered
        /// APNs called the token dead (410 since the date, `BadDeviceToken`, `Unregistered`).
        case tokenInvalid(Date)
        /// 429, 5xx or connection trouble after the client's own retries: the job retries.
        case retryable
        /// Refused for a reason a retry cannot fix.
        case refused
    }

    func outcome(_ result: Result<APNSSendResult, any Error>) -> SendOutcome {
        switch result {
        case .success(.delivered): return .delivered
        case .success(.rejected(let rejection)):
            if rejection.isDeviceTokenInvalid { return .tokenInvalid(rejection.deviceTokenInvalidSince ?? clock.now()) }
            if rejection.category == .retryable || rejection.category == .providerTokenExpired { return .retryable }
            return .refused
        case .failure(let error):
            return error is APNSValidationError ? .refused : .retryable
        }
    }

    /// The delivery row of a result, counted in `/metrics`.
    func record(
        _ result: Result<APNSSendResult, any Error>,
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
        switch result {
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

    /// Sends the requests, at most 32 at a time; the results in the requests' order.
    func sendAll(_ requests: [APNSRequest], using client: APNSClient) async -> [Result<APNSSendResult, any Error>] {
        let results = await withTaskGroup(
            of: (Int, Result<APNSSendResult, any Error>).self,
            returning: [Result<APNSSendResult, any Error>?].self
        ) { group in
            var results = [Result<APNSSendResult, any Error>?](repeating: nil, count: requests.count)
            var next = 0
            while next < requests.count {
                // At most 32 in flight: wait for one before adding the 33rd.
                if next >= 32, let (index, result) = await group.next() { results[index] = result }
                let index = next
                let request = requests[index]
                group.addTask { (index, await Self.send(request, using: client)) }
                next += 1
            }
            while let (index, result) = await group.next() { results[index] = result }
            return results
        }
        return results.map { $0 ?? .failure(CancellationError()) }
    }

    private static func send(
        _ request: APNSRequest,
        using client: APNSClient
    ) async -> Result<APNSSendResult, any Error> {
        do {
            return .success(try await client.send(request))
        } catch {
            return .failure(error)
        }
    }
}
