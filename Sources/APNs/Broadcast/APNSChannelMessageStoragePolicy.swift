/// What APNs keeps for devices that are offline when a broadcast is sent; fixed at creation.
public enum APNSChannelMessageStoragePolicy: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `0`: nothing is stored. For frequent updates; a higher publishing budget. Broadcasts on such
    /// a channel must use `apns-expiration: 0`.
    case noMessageStored = 0
    /// `1`: the most recent message is stored (up to 8 hours, or until its expiration).
    case mostRecentMessageStored = 1

    public var description: String { String(rawValue) }
}
