/// The `aps.interruption-level`: how much a notification may interrupt (iOS 15+).
public struct APNSInterruptionLevel: RawRepresentable, Sendable, Hashable, Encodable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Added to the list without lighting the screen or playing a sound.
    public static let passive = APNSInterruptionLevel(rawValue: "passive")
    /// Presented immediately, lights up the screen, may play a sound (the default).
    public static let active = APNSInterruptionLevel(rawValue: "active")
    /// Presented immediately and may break through Focus.
    public static let timeSensitive = APNSInterruptionLevel(rawValue: "time-sensitive")
    /// Presented immediately, breaks through Focus and the ring switch; needs Apple's entitlement.
    public static let critical = APNSInterruptionLevel(rawValue: "critical")

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}
