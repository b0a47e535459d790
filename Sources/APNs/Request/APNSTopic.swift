/// Where a device push goes: an app's bundle ID, completed with the push type's suffix, or a topic
/// given in full.
public enum APNSTopic: Sendable, Hashable, CustomStringConvertible {
    /// The app's bundle ID; the `apns-topic` becomes ``APNSPushType/topic(forBundleID:)``.
    case bundleID(String)
    /// The exact `apns-topic`, for MDM topics and unusual setups.
    case explicit(String)

    /// The `apns-topic` header value for `pushType`.
    public func resolved(for pushType: APNSPushType) -> String {
        switch self {
        case .bundleID(let bundleID): pushType.topic(forBundleID: bundleID)
        case .explicit(let topic): topic
        }
    }

    public var description: String {
        switch self {
        case .bundleID(let bundleID): bundleID
        case .explicit(let topic): topic
        }
    }
}
