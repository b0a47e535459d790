import APNs
import APNsTransport
import Foundation
import HeraldCore
import Jobs
import Notifications
import Storage

extension LiveActivitySender {
    /// Sends an accepted update or end: one broadcast on a channel; else, per instance, a
    /// `liveactivity` push to its update token, or a silent push to its device token. A dead
    /// update token is dropped and the same update goes by silent push at once; a dead device
    /// token makes the instance unreachable. Without instances nothing is sent: the update stays
    /// the latest, and an instance registering later receives it.
    func route(_ id: UUID, _ update: LiveActivityUpdate, only instanceID: String?) async throws -> JobOutcome {
        let (found, instances) = try await routeReads.submit(id)
        guard let head = found, head.state == .started || head.state == .ended else { return .done }
        let app = try app(head.app)
        let client = try clients.client(for: app, environment: head.environment)
        let payload = try Self.liveActivityPayload(update)
        let event = update.event.rawValue
        var write = LiveActivityRouteWrite(id: id, timestamp: update.timestamp)
        if let channel = head.channelID {
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
            write.deliveries.append(record(result, event: event, route: .broadcast, token: channel))
            try await routeWrites.submit(write)
            if case .retryable = outcome(result) { return .retry(reason: "APNs did not take the broadcast yet") }
            if update.event == .end { try await scheduleChannelDeletion(id) }
            return .done
        }
        // An instance first reported after this update was accepted has a catch-up job of its own
        // for the activity's latest update: the update's own job leaves it to that job.
        let targets = instances.filter { target in
            guard target.instance.state == .active, target.sentTimestamp < update.timestamp else { return false }
            if let instanceID { return target.instance.activityID == instanceID }
            return target.registeredAfter < update.timestamp
        }.map(\.instance)
        var retry = false
        // The update-token pushes first, all at once; the silent ones after, including the fallbacks.
        let withToken = targets.filter { $0.updateToken != nil }
        var silent = targets.filter { $0.updateToken == nil && $0.deviceToken != nil && !$0.unreachable }
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
            write.deliveries.append(record(result, event: event, route: .updateToken, token: token))
            switch outcome(result) {
            case .delivered: write.received.append(instance.activityID)
            case .refused: break
            case .retryable: retry = true
            case .tokenInvalid:
                write.droppedUpdateTokens.append((instance.activityID, token))
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
            write.deliveries.append(record(result, event: event, route: .silent, token: token))
            switch outcome(result) {
            case .delivered: write.received.append(instance.activityID)
            case .refused: break
            case .retryable: retry = true
            case .tokenInvalid: write.unreachable.append((instance.activityID, token))
            }
        }
        if !write.deliveries.isEmpty { try await routeWrites.submit(write) }
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
        // Most updates go to one instance: no task group for them.
        if requests.isEmpty { return [] }
        if requests.count == 1 { return [await Self.send(requests[0], using: client)] }
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
