/// The `aps.alert` dictionary: what the notification shows, as text or as keys into the app's
/// `Localizable.strings`.
public struct APNSAlert: Sendable, Hashable, Encodable {
    public var title: String?
    public var subtitle: String?
    public var body: String?
    /// `title-loc-key`
    public var titleLocalizationKey: String?
    /// `title-loc-args`
    public var titleLocalizationArguments: [String]?
    /// `subtitle-loc-key`
    public var subtitleLocalizationKey: String?
    /// `subtitle-loc-args`
    public var subtitleLocalizationArguments: [String]?
    /// `loc-key`: the body's localisation key.
    public var localizationKey: String?
    /// `loc-args`
    public var localizationArguments: [String]?
    /// `launch-image`
    public var launchImage: String?

    public init(title: String? = nil, subtitle: String? = nil, body: String? = nil) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
    }

    enum CodingKeys: String, CodingKey {
        case title, subtitle, body
        case titleLocalizationKey = "title-loc-key"
        case titleLocalizationArguments = "title-loc-args"
        case subtitleLocalizationKey = "subtitle-loc-key"
        case subtitleLocalizationArguments = "subtitle-loc-args"
        case localizationKey = "loc-key"
        case localizationArguments = "loc-args"
        case launchImage = "launch-image"
    }
}
