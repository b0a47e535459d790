import APNs
import Foundation
import HeraldCrypto

/// The simulator's virtual devices: the Live Activities each token holds, their update tokens
/// and channel subscriptions, with limits on devices and on activities per device.
///
/// Activity ids are unique across the simulator, so a silent push to an app's device token finds
/// the activity its push-to-start created on the push-to-start token: on an iPhone both tokens
/// belong to the same phone.
struct VirtualDeviceRegistry: Sendable {
    /// Devices (tokens) that hold activities.
    let deviceLimit: Int
    /// Activities per device, dismissed ones included (those go first when room is needed).
    let activityLimit: Int
    /// Activity ids per device token, in start order.
    private(set) var devices: [String: [String]] = [:]
    private(set) var activities: [String: APNSSimulatorActivity] = [:]
    /// Update token → activity id.
    private var updateTokens: [String: String] = [:]
    /// `bundleID` + space + channel id → subscribed activity ids.
    private var subscribers: [String: [String]] = [:]
    /// Push-to-starts accepted by APNs that started nothing because a limit was reached.
    private(set) var refusedStarts = 0

    init(deviceLimit: Int = 100_000, activityLimit: Int = 100) {
        self.deviceLimit = max(1, deviceLimit)
        self.activityLimit = max(1, activityLimit)
    }

    /// Where a change came from: the route and the request's id.
    struct Source: Sendable {
        var route: APNSSimulatorActivity.Route
        var requestID: String?
    }

    // MARK: Reading

    /// The device's activities, in start order, as of `now`.
    mutating func activities(device token: String, now: Date) -> [APNSSimulatorActivity] {
        (devices[token.lowercased()] ?? []).compactMap { settled($0, now: now) }
    }

    /// Every activity, by device then start.
    mutating func all(now: Date) -> [APNSSimulatorActivity] {
        devices.keys.sorted().flatMap { activities(device: $0, now: now) }
    }

    /// The activity `id` when it is on `token`'s device.
    mutating func activity(device token: String, id: String, now: Date) -> APNSSimulatorActivity? {
        guard let activity = settled(id, now: now), activity.deviceToken == token.lowercased() else { return nil }
        return activity
    }

    private mutating func settled(_ id: String, now: Date) -> APNSSimulatorActivity? {
        guard var activity = activities[id] else { return nil }
        let before = activity
        activity.settle(now: now)
        if activity != before { activities[id] = activity }
        return activity
    }

    // MARK: Pushes

    /// Applies an accepted device push to `token` for the app `bundleID`.
    mutating func apply(
        _ input: VirtualDeviceInput,
        token: String,
        bundleID: String,
        channels: ChannelRegistry,
        requestID: String?,
        now: Date
    ) {
        switch input {
        case .liveActivity(let message) where message.event == .start:
            let started = start(
                message,
                token: token,
                bundleID: bundleID,
                channels: channels,
                source: Source(route: .pushToStart, requestID: requestID),
                now: now
            )
            if case .failure(.deviceLimit) = started { refusedStarts += 1 }
            if case .failure(.activityLimit) = started { refusedStarts += 1 }
        case .liveActivity(let message):
            // Only an update token names an activity; iOS drops updates sent to other tokens.
            guard let id = updateTokens[token] else { return }
            change(id, with: message, from: Source(route: .updateToken, requestID: requestID), now: now)
        case .silent(let activityID, let message):
            guard activities[activityID]?.bundleID == bundleID else { return }
            change(activityID, with: message, from: Source(route: .silent, requestID: requestID), now: now)
        }
    }

    /// Applies an accepted broadcast to every activity subscribed to the channel.
    mutating func broadcast(
        _ message: LiveActivityMessage,
        bundleID: String,
        channelID: String,
        requestID: String?,
        now: Date
    ) {
        for id in subscribers[bundleID + " " + channelID] ?? [] {
            change(id, with: message, from: Source(route: .broadcast, requestID: requestID), now: now)
        }
    }

    /// Why an activity did not start.
    enum StartFailure: Error, Sendable, Equatable {
        /// No `attributes-type`, `attributes` or `content-state`: iOS starts nothing.
        case incomplete
        /// ``VirtualDeviceRegistry/deviceLimit`` devices hold activities.
        case deviceLimit
        /// The device holds ``VirtualDeviceRegistry/activityLimit`` activities, none dismissed.
        case activityLimit
        /// An in-app start asked for a channel the app does not have.
        case channelNotRegistered
        /// The token registry is full (its limit): no update token can be made.
        case tokenLimit(Int)
    }

    /// Creates the activity `message` starts on `token`'s device, making room by forgetting
    /// dismissed activities; returns its id.
    private mutating func start(
        _ message: LiveActivityMessage,
        token: String,
        bundleID: String,
        channels: ChannelRegistry,
        source: Source,
        now: Date
    ) -> Result<String, StartFailure> {
        guard let type = message.attributesType, !type.isEmpty, let attributes = message.attributes,
            let contentState = message.contentState
        else { return .failure(.incomplete) }
        if devices[token] == nil, devices.count >= deviceLimit { return .failure(.deviceLimit) }
        var ids = devices[token] ?? []
        while ids.count >= activityLimit,
            let dismissed = ids.firstIndex(where: { settled($0, now: now)?.state == .dismissed })
        {
            forget(ids.remove(at: dismissed))
        }
        devices[token] = ids
        guard ids.count < activityLimit else { return .failure(.activityLimit) }
        var id = UUID().uuidString
        while activities[id] != nil { id = UUID().uuidString }
        var activity = APNSSimulatorActivity(
            activityID: id,
            deviceToken: token,
            bundleID: bundleID,
            attributesType: type,
            attributes: attributes,
            contentState: contentState,
            alert: message.alert,
            staleDate: message.staleDate,
            dismissalDate: message.dismissalDate,
            relevanceScore: message.relevanceScore,
            allowed: false,
            requestsUpdateToken: message.inputPushToken,
            updateToken: nil,
            channelID: nil,
            state: .active,
            timestamp: message.timestamp ?? 0,
            startedAt: now,
            endedAt: nil,
            changes: []
        )
        var note: String?
        if let channel = message.inputPushChannel {
            // APNs requires the channel to exist; the activity then listens to its broadcasts.
            if channels.channel(bundleID: bundleID, id: channel) != nil {
                activity.channelID = channel
                subscribers[bundleID + " " + channel, default: []].append(id)
            } else {
                note = "channel_not_registered"
            }
        }
        activity.record(
            .init(
                at: now,
                event: "start",
                route: source.route,
                timestamp: message.timestamp,
                applied: true,
                note: note,
                requestID: source.requestID
            )
        )
        activities[id] = activity
        ids.append(id)
        devices[token] = ids
        return .success(id)
    }

    /// What an in-app start (`Activity.request(…, pushType:)`) asks for.
    enum InAppPushType: String, Sendable {
        /// `.token`: an update token at once.
        case token
        /// `.channel(id)`: broadcasts on the channel.
        case channel
    }

    /// The app starts an activity itself, in the foreground: allowed at once (no Allow prompt),
    /// with an update token at once for ``InAppPushType/token``, subscribed for
    /// ``InAppPushType/channel`` (the channel must exist, or `Activity.request` fails).
    mutating func startInApp(
        _ message: LiveActivityMessage,
        token: String,
        bundleID: String,
        pushType: InAppPushType?,
        channels: ChannelRegistry,
        tokens: inout DeviceTokenRegistry,
        now: Date
    ) -> Result<APNSSimulatorActivity, StartFailure> {
        var message = message
        message.inputPushToken = pushType == .token
        if pushType != .channel { message.inputPushChannel = nil }
        if pushType == .channel {
            guard let channel = message.inputPushChannel, channels.channel(bundleID: bundleID, id: channel) != nil
            else {
                return .failure(.channelNotRegistered)
            }
        }
        if pushType == .token, tokens.tokens.count >= tokens.limit { return .failure(.tokenLimit(tokens.limit)) }
        let id: String
        switch start(
            message,
            token: token,
            bundleID: bundleID,
            channels: channels,
            source: Source(route: .app, requestID: nil),
            now: now
        ) {
        case .success(let started): id = started
        case .failure(let failure): return .failure(failure)
        }
        activities[id]?.allowed = true
        if pushType == .token, case .failure(let failure) = issueUpdateToken(id, tokens: &tokens) {
            return .failure(failure)
        }
        return activities[id].map { .success($0) } ?? .failure(.incomplete)
    }

    /// An update or end, unless the activity is no longer active or the timestamp is not newer
    /// than the last one applied (recorded as ignored either way).
    private mutating func change(
        _ id: String,
        with message: LiveActivityMessage,
        from source: Source,
        now: Date
    ) {
        guard var activity = activities[id] else { return }
        activity.settle(now: now)
        var change = APNSSimulatorActivity.Change(
            at: now,
            event: message.event.rawValue,
            route: source.route,
            timestamp: message.timestamp,
            applied: false,
            requestID: source.requestID
        )
        if activity.state != .active {
            change.note = "not_active"
        } else if let timestamp = message.timestamp {
            if timestamp <= activity.timestamp {
                change.note = "timestamp_not_newer"
            } else {
                change.applied = true
                activity.timestamp = timestamp
                if let state = message.contentState { activity.contentState = state }
                if let alert = message.alert { activity.alert = alert }
                if let date = message.staleDate { activity.staleDate = date }
                if let date = message.dismissalDate { activity.dismissalDate = date }
                if let score = message.relevanceScore { activity.relevanceScore = score }
            }
        } else {
            change.note = "no_timestamp"
        }
        activity.record(change)
        if change.applied, message.event == .end {
            activity.state = .ended
            activity.endedAt = now
            activity.settle(now: now)
        }
        activities[id] = activity
    }

    // MARK: The user

    enum AllowFailure: Error, Sendable {
        case unknownActivity
        /// The token registry is full (its limit).
        case tokenLimit(Int)
    }

    /// Gives the activity a fresh update token registered in `tokens` for the app's Live
    /// Activity topic.
    private mutating func issueUpdateToken(
        _ id: String,
        tokens: inout DeviceTokenRegistry
    ) -> Result<String, StartFailure> {
        guard let bundleID = activities[id]?.bundleID else { return .failure(.incomplete) }
        var updateToken = Self.makeUpdateToken()
        while updateTokens[updateToken] != nil { updateToken = Self.makeUpdateToken() }
        let topic = bundleID + APNSPushType.liveActivity.topicSuffix
        guard tokens.set(APNSSimulatorTokenState(token: updateToken, topic: topic)) else {
            return .failure(.tokenLimit(tokens.limit))
        }
        updateTokens[updateToken] = id
        activities[id]?.updateToken = updateToken
        return .success(updateToken)
    }

    /// The user taps Allow: the activity is allowed and, when its start asked for one and it is
    /// still active, gets a fresh update token registered in `tokens` for the app's Live Activity
    /// topic. Allowing twice changes nothing.
    mutating func allow(
        device token: String,
        id: String,
        tokens: inout DeviceTokenRegistry,
        now: Date
    ) -> Result<APNSSimulatorActivity, AllowFailure> {
        guard let found = activity(device: token, id: id, now: now) else { return .failure(.unknownActivity) }
        if found.allowed { return .success(found) }
        if found.requestsUpdateToken, found.state == .active,
            case .failure(.tokenLimit(let limit)) = issueUpdateToken(id, tokens: &tokens)
        {
            return .failure(.tokenLimit(limit))
        }
        guard var activity = activities[id] else { return .failure(.unknownActivity) }
        activity.allowed = true
        activity.record(.init(at: now, event: "allow", route: .user, timestamp: nil, applied: true))
        activities[id] = activity
        return .success(activity)
    }

    /// 32 random bytes, lowercase hex: the shape of an APNs token.
    static func makeUpdateToken() -> String {
        SecureRandom.bytes(32).map { byte in
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]], as: UTF8.self)
        }.joined()
    }

    // MARK: Forgetting

    private mutating func forget(_ id: String) {
        guard let activity = activities.removeValue(forKey: id) else { return }
        if let token = activity.updateToken { updateTokens[token] = nil }
        if let channel = activity.channelID {
            let key = activity.bundleID + " " + channel
            subscribers[key]?.removeAll { $0 == id }
            if subscribers[key]?.isEmpty == true { subscribers[key] = nil }
        }
    }

    /// Forgets every device; returns the update tokens that were handed out.
    mutating func removeAll() -> [String] {
        let tokens = Array(updateTokens.keys)
        devices.removeAll()
        activities.removeAll()
        updateTokens.removeAll()
        subscribers.removeAll()
        refusedStarts = 0
        return tokens
    }
}
