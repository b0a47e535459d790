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
}
