public import HeraldCore

/// The `aps.alert` of a Live Activity push: title and body, each plain or localised, and a sound.
public struct APNSLiveActivityAlert: Sendable, Hashable, Encodable {
    public var title: APNSLocalizableText
    public var body: APNSLocalizableText
    public var sound: APNSSound?

    public init(title: APNSLocalizableText, body: APNSLocalizableText, sound: APNSSound? = nil) {
        self.title = title
        self.body = body
        self.sound = sound
    }

    /// `{"title", "body", "sound"?}`.
    ///
    /// - Throws: `EncodingError` for a critical sound's volume outside 0...1.
    public func jsonValue() throws -> APNSJSONValue {
        var members: [String: APNSJSONValue] = ["title": title.jsonValue, "body": body.jsonValue]
        if let sound { members["sound"] = try sound.jsonValue() }
        return .object(members)
    }

    public func encode(to encoder: any Encoder) throws {
        try jsonValue().encode(to: encoder)
    }
}
