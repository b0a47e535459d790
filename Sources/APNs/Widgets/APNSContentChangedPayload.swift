public import HeraldCore

/// The body of a `widgets` or `controls` push: `{"aps":{"content-changed":true}}`, which asks
/// WidgetKit to reload the app's widgets or controls (APNS.md §4).
public struct APNSContentChangedPayload: APNSPayload, Hashable, Encodable {
    /// The app's own keys, beside `aps`. A key named `aps` makes encoding fail.
    public var custom: [String: APNSJSONValue]

    public init(custom: [String: APNSJSONValue] = [:]) {
        self.custom = custom
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: APNSDynamicKey.self)
        try container.encode(["content-changed": true], forKey: APNSDynamicKey("aps"))
        try container.encodeCustomKeys(custom)
    }
}
