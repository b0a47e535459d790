/// The `aps.event` of a Live Activity push.
public struct APNSLiveActivityEvent: RawRepresentable, Sendable, Hashable, Encodable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Starts an activity (push-to-start token, iOS 17.2+). Broadcasts cannot start activities.
    public static let start = APNSLiveActivityEvent(rawValue: "start")
    /// Replaces the activity's content state.
    public static let update = APNSLiveActivityEvent(rawValue: "update")
    /// Ends the activity, optionally with final content and a `dismissal-date`.
    public static let end = APNSLiveActivityEvent(rawValue: "end")

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}
