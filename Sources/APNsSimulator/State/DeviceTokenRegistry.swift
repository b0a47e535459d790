import APNs
public import Foundation

/// What the simulator knows about one device token, set through `POST /tokens`.
public struct APNSSimulatorTokenState: Sendable, Hashable {
    /// The token, lowercase.
    public var token: String
    /// The app (bundle ID) or exact topic the token belongs to; pushes to other topics get
    /// `DeviceTokenNotForTopic`. `nil`: any topic.
    public var topic: String?
    /// Since when the token is no longer valid: pushes get 410 `Unregistered` with this time.
    public var unregisteredAt: Date?

    public init(token: String, topic: String? = nil, unregisteredAt: Date? = nil) {
        self.token = token.lowercased()
        self.topic = topic
        self.unregisteredAt = unregisteredAt
    }
}

/// Registered and unregistered device tokens, at most `limit`. Unknown tokens are valid for
/// every topic.
struct DeviceTokenRegistry: Sendable {
    let limit: Int
    private(set) var tokens: [String: APNSSimulatorTokenState] = [:]

    init(limit: Int = 100_000) {
        self.limit = max(1, limit)
    }

    /// Registers or updates `state`; `false` (and nothing changed) when it is a new token and the
    /// registry already holds `limit`.
    @discardableResult
    mutating func set(_ state: APNSSimulatorTokenState) -> Bool {
        guard tokens.count < limit || tokens[state.token] != nil else { return false }
        tokens[state.token] = state
        return true
    }

    mutating func remove(_ token: String) -> Bool {
        tokens.removeValue(forKey: token.lowercased()) != nil
    }

    mutating func removeAll() {
        tokens.removeAll()
    }

    /// 410 `Unregistered` (with the timestamp) for an unregistered token, `DeviceTokenNotForTopic`
    /// for a token registered to another app, else `nil`.
    func check(_ push: DevicePush) -> SimulatorRejection? {
        guard let state = tokens[push.token] else { return nil }
        if let unregisteredAt = state.unregisteredAt {
            return SimulatorRejection(status: 410, reason: .unregistered, timestamp: unregisteredAt)
        }
        if let topic = state.topic, topic != push.topic, topic != push.bundleID {
            return .badRequest(.deviceTokenNotForTopic)
        }
        return nil
    }
}
