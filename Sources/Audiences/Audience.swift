public import HeraldCore

/// Who a send goes to: the one audience shape of every feature that sends to many devices
/// (notifications now; wake pings and Live Activities later).
///
/// ```json
/// {"tokens": ["<hex>", …]}            the devices listed, 1 to 10,000
/// {"users": ["u1", …]}                every active device of these users, 1 to 10,000 ids
/// {"tags": {"any": ["beta", …]}}      every active device with at least one of the tags
/// {"tags": {"all": ["beta", "fr"]}}   every active device with all of the tags
/// {"all": true}                       every active device of the app and environment
/// ```
///
/// A `tokens` audience is fixed when the send is accepted. The others are resolved against the
/// device registry when the send runs, a page at a time (``selector`` and
/// ``DeviceStore/activeTokens(app:environment:selector:after:limit:)``): devices registered until
/// then are included, invalid ones are left out.
public enum Audience: Sendable, Hashable {
    /// Device tokens: lowercase, unique, in the order given.
    case tokens([String])
    /// User ids, unique, in the order given.
    case users([String])
    /// Devices by tag.
    case tags(TagMatch)
    /// Every active device of the app and environment.
    case all

    /// How a `tags` audience matches a device's tags. The tags are unique, in the order given.
    public enum TagMatch: Sendable, Hashable {
        /// A device with at least one of these tags.
        case any([String])
        /// A device with every one of these tags.
        case all([String])
    }

    public var kind: AudienceKind {
        switch self {
        case .tokens: .tokens
        case .users: .users
        case .tags(.any): .tagsAny
        case .tags(.all): .tagsAll
        case .all: .all
        }
    }

    /// Whether the devices are read from the registry when the send runs (everything but `tokens`).
    public var isResolvedAtSend: Bool {
        if case .tokens = self { return false }
        return true
    }
}

/// The kind of an ``Audience``, as stored and shown (`audience_kind` in the API).
public enum AudienceKind: String, Sendable, Hashable, CaseIterable, Codable {
    case tokens
    case users
    case tagsAny = "tags_any"
    case tagsAll = "tags_all"
    case all
}

/// The limits on an ``Audience``.
public enum AudienceLimits {
    /// Tokens in a `tokens` audience.
    public static let maximumTokens = 10_000
    /// User ids in a `users` audience.
    public static let maximumUsers = 10_000
    /// Bytes of one user id (UTF-8); the device registry stores no longer ones.
    public static let maximumUserIDBytes = 255
    /// Tags in a `tags` audience: a device carries at most as many, so `all` of more could never
    /// match.
    public static let maximumTags = 50
    /// Characters of one tag; the device registry takes no longer ones.
    public static let tagLength = 1...64
}

/// The refusals of an audience (``AudienceError``), which several features take.
public enum AudienceDomain: RefusalDomain {}

/// Why an audience was refused: invalid, or too large when over a count limit (tokens or users),
/// with a sentence saying what to fix and the JSON path at fault. Each feature that takes an
/// audience turns it into its own refusal (`NotificationError(error)`).
public typealias AudienceError = Refusal<AudienceDomain>
