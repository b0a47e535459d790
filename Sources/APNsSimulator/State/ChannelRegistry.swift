public import APNs
public import Foundation
import HeraldCrypto

/// A broadcast channel the simulator holds.
public struct APNSSimulatorChannel: Sendable, Hashable {
    public var bundleID: String
    public var channelID: String
    public var storagePolicy: APNSChannelMessageStoragePolicy
    public var createdAt: Date
}

/// The channels of every app, in creation order, with APNs' per-app limit and a limit across
/// every app.
struct ChannelRegistry: Sendable {
    let limit: Int
    let totalLimit: Int
    private var channels: [String: [String: APNSSimulatorChannel]] = [:]
    private var order: [String: [String]] = [:]
    private(set) var count = 0

    init(limit: Int, totalLimit: Int = 100_000) {
        self.limit = limit
        self.totalLimit = totalLimit
    }

    /// A new channel with a random id (16 random bytes, base64, never reused), or
    /// `CannotCreateChannelConfig` once the app has ``limit`` channels.
    mutating func create(
        bundleID: String,
        policy: APNSChannelMessageStoragePolicy,
        now: Date
    ) -> Result<APNSSimulatorChannel, SimulatorRejection> {
        guard order[bundleID, default: []].count < limit, count < totalLimit else {
            return .failure(.badRequest(.cannotCreateChannelConfig))
        }
        var id = Data(SecureRandom.bytes(16)).base64EncodedString()
        while channels[bundleID]?[id] != nil { id = Data(SecureRandom.bytes(16)).base64EncodedString() }
        let channel = APNSSimulatorChannel(bundleID: bundleID, channelID: id, storagePolicy: policy, createdAt: now)
        channels[bundleID, default: [:]][id] = channel
        order[bundleID, default: []].append(id)
        count += 1
        return .success(channel)
    }

    func channel(bundleID: String, id: String) -> APNSSimulatorChannel? {
        channels[bundleID]?[id]
    }

    mutating func delete(bundleID: String, id: String) -> APNSSimulatorChannel? {
        guard let removed = channels[bundleID]?.removeValue(forKey: id) else { return nil }
        order[bundleID]?.removeAll { $0 == id }
        if order[bundleID]?.isEmpty == true {
            order[bundleID] = nil
            channels[bundleID] = nil
        }
        count -= 1
        return removed
    }

    /// The app's channel ids, oldest first.
    func ids(bundleID: String) -> [String] {
        order[bundleID] ?? []
    }

    /// Every channel, by app then creation.
    func all() -> [APNSSimulatorChannel] {
        order.keys.sorted().flatMap { app in (order[app] ?? []).compactMap { channels[app]?[$0] } }
    }

    mutating func removeAll() {
        channels.removeAll()
        order.removeAll()
        count = 0
    }
}
