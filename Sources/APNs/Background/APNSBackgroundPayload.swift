public import HeraldCore

/// The body of a background push: `{"aps":{"content-available":1}}` plus the app's own keys —
/// Apple allows nothing else in `aps` (APNS.md §4).
public struct APNSBackgroundPayload: APNSPayload, Hashable, Encodable {
    /// The app's own keys, beside `aps`. A key named `aps` makes encoding fail.
    public var custom: [String: APNSJSONValue]

    public init(custom: [String: APNSJSONValue] = [:]) {
        self.custom = custom
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: APNSDynamicKey.self)
        try container.encode(["content-available": 1], forKey: APNSDynamicKey("aps"))
        try container.encodeCustomKeys(custom)
    }
}
