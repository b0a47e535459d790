/// How urgently APNs delivers a notification: the `apns-priority` header (APNS.md §3).
///
/// Apple fixes the three values; which of them a push type accepts is
/// ``APNSPushType/allowedPriorities``.
public enum APNSPriority: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `10`: send immediately. APNs' default when the header is absent.
    case immediately = 10
    /// `5`: send at a time that takes the device's power into account; may be grouped and
    /// delivered in bursts. The only priority background pushes may use.
    case consideringDevicePower = 5
    /// `1`: prioritise the device's power above everything; never wakes the device.
    case prioritizingPower = 1

    /// Parses an `apns-priority` header value (`"10"`, `"5"`, `"1"`); `nil` for anything else.
    public init?(headerValue: String) {
        guard let number = Int(headerValue), let priority = APNSPriority(rawValue: number) else { return nil }
        self = priority
    }

    /// The `apns-priority` header value.
    public var headerValue: String { String(rawValue) }

    public var description: String { headerValue }
}
