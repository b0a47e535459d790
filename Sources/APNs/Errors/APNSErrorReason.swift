/// The `reason` APNs gives for refusing a request (APNS.md §7 broadcast, §8 device pushes).
///
/// A struct, not an enum: APNs adds reasons, and a string this version does not know is kept as
/// it came (``isKnown`` is then `false`). ``category(status:)`` says what to do about it.
public struct APNSErrorReason: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// A reason this version does not know, kept as sent.
    public static func unknown(_ rawValue: String) -> APNSErrorReason {
        APNSErrorReason(rawValue: rawValue)
    }

    /// Stands for a response without a readable reason (no body, or not the JSON APNs sends).
    public static let unknown = APNSErrorReason(rawValue: "Unknown")

    // MARK: 400

    /// The collapse ID is longer than 64 bytes.
    public static let badCollapseId = APNSErrorReason(rawValue: "BadCollapseId")
    /// The token is malformed, or belongs to the other environment.
    public static let badDeviceToken = APNSErrorReason(rawValue: "BadDeviceToken")
    /// The `apns-expiration` is invalid (for a policy-0 channel: not `0`).
    public static let badExpirationDate = APNSErrorReason(rawValue: "BadExpirationDate")
    /// The `apns-id` (or `apns-request-id`) is not a canonical UUID.
    public static let badMessageId = APNSErrorReason(rawValue: "BadMessageId")
    /// The `apns-priority` is invalid.
    public static let badPriority = APNSErrorReason(rawValue: "BadPriority")
    /// The `apns-topic` is invalid.
    public static let badTopic = APNSErrorReason(rawValue: "BadTopic")
    /// The device token does not match the topic.
    public static let deviceTokenNotForTopic = APNSErrorReason(rawValue: "DeviceTokenNotForTopic")
    /// A header was repeated.
    public static let duplicateHeaders = APNSErrorReason(rawValue: "DuplicateHeaders")
    /// The connection was idle too long.
    public static let idleTimeout = APNSErrorReason(rawValue: "IdleTimeout")
    /// The `apns-push-type` is not one APNs knows.
    public static let invalidPushType = APNSErrorReason(rawValue: "InvalidPushType")
    /// The path has no device token.
    public static let missingDeviceToken = APNSErrorReason(rawValue: "MissingDeviceToken")
    /// `apns-topic` is required (multi-topic certificate).
    public static let missingTopic = APNSErrorReason(rawValue: "MissingTopic")
    /// The body is empty.
    public static let payloadEmpty = APNSErrorReason(rawValue: "PayloadEmpty")
    /// Sending to this topic is not allowed (a broadcast path with a push-type suffix, for one).
    public static let topicDisallowed = APNSErrorReason(rawValue: "TopicDisallowed")
    /// The app has no Broadcast Capability.
    public static let featureNotEnabled = APNSErrorReason(rawValue: "FeatureNotEnabled")
    /// `apns-channel-id` is required.
    public static let missingChannelId = APNSErrorReason(rawValue: "MissingChannelId")
    /// The channel ID is badly encoded or too long.
    public static let badChannelId = APNSErrorReason(rawValue: "BadChannelId")
    /// The channel does not exist (in this environment).
    public static let channelNotRegistered = APNSErrorReason(rawValue: "ChannelNotRegistered")
    /// The JSON body has an attribute APNs does not know.
    public static let badRequestParams = APNSErrorReason(rawValue: "BadRequestParams")
    /// The body cannot be parsed.
    public static let badRequestPayload = APNSErrorReason(rawValue: "BadRequestPayload")
    /// `apns-push-type` is required.
    public static let missingPushType = APNSErrorReason(rawValue: "MissingPushType")
    /// The app has reached its channel limit (10,000 per environment).
    public static let cannotCreateChannelConfig = APNSErrorReason(rawValue: "CannotCreateChannelConfig")

    // MARK: 403

    /// The certificate is invalid.
    public static let badCertificate = APNSErrorReason(rawValue: "BadCertificate")
    /// The certificate is for the other environment.
    public static let badCertificateEnvironment = APNSErrorReason(rawValue: "BadCertificateEnvironment")
    /// The provider token's `iat` is more than an hour old: make a new one.
    public static let expiredProviderToken = APNSErrorReason(rawValue: "ExpiredProviderToken")
    /// The action is not allowed. Do not retry.
    public static let forbidden = APNSErrorReason(rawValue: "Forbidden")
    /// The provider token is not valid or its signature does not verify.
    public static let invalidProviderToken = APNSErrorReason(rawValue: "InvalidProviderToken")
    /// No provider token and no certificate.
    public static let missingProviderToken = APNSErrorReason(rawValue: "MissingProviderToken")
    /// The token's key is unrelated to the key this connection started with.
    public static let unrelatedKeyIdInToken = APNSErrorReason(rawValue: "UnrelatedKeyIdInToken")
    /// The key is restricted to the other environment (Apple's documented string).
    public static let badEnvironmentKeyIdInToken = APNSErrorReason(rawValue: "BadEnvironmentKeyIdInToken")
    /// The same as ``badEnvironmentKeyIdInToken``, as APNs has been observed to spell it.
    public static let badEnvironmentKeyInToken = APNSErrorReason(rawValue: "BadEnvironmentKeyInToken")
    /// The token's or certificate's bundle IDs do not include the path's (broadcast).
    public static let topicMismatch = APNSErrorReason(rawValue: "TopicMismatch")

    // MARK: 404, 405, 410, 413

    /// The path is wrong.
    public static let badPath = APNSErrorReason(rawValue: "BadPath")
    /// The method is not `POST` (or not what the channel operation needs).
    public static let methodNotAllowed = APNSErrorReason(rawValue: "MethodNotAllowed")
    /// The device token has expired.
    public static let expiredToken = APNSErrorReason(rawValue: "ExpiredToken")
    /// The device token is no longer active for the topic (the response carries `timestamp`).
    public static let unregistered = APNSErrorReason(rawValue: "Unregistered")
    /// The payload is over the limit.
    public static let payloadTooLarge = APNSErrorReason(rawValue: "PayloadTooLarge")

    // MARK: 429, 500, 503

    /// A new provider token was presented more than once in 20 minutes on one connection.
    public static let tooManyProviderTokenUpdates = APNSErrorReason(rawValue: "TooManyProviderTokenUpdates")
    /// Too many pushes in a row to the same device token.
    public static let tooManyRequests = APNSErrorReason(rawValue: "TooManyRequests")
    /// An APNs internal error.
    public static let internalServerError = APNSErrorReason(rawValue: "InternalServerError")
    /// APNs is unavailable.
    public static let serviceUnavailable = APNSErrorReason(rawValue: "ServiceUnavailable")
    /// The same as ``serviceUnavailable``, as Apple's broadcast error table spells it.
    public static let serviceUnavailableWithSpace = APNSErrorReason(rawValue: "Service Unavailable")
    /// The APNs server is shutting down.
    public static let shutdown = APNSErrorReason(rawValue: "Shutdown")

    /// Every reason in Apple's device and broadcast tables, plus the observed spellings.
    public static let allKnown: [APNSErrorReason] = [
        .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
        .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
        .missingTopic, .payloadEmpty, .topicDisallowed, .featureNotEnabled, .missingChannelId, .badChannelId,
        .channelNotRegistered, .badRequestParams, .badRequestPayload, .missingPushType, .cannotCreateChannelConfig,
        .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
        .missingProviderToken, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken, .badEnvironmentKeyInToken,
        .topicMismatch, .badPath, .methodNotAllowed, .expiredToken, .unregistered, .payloadTooLarge,
        .tooManyProviderTokenUpdates, .tooManyRequests, .internalServerError, .serviceUnavailable,
        .serviceUnavailableWithSpace, .shutdown,
    ]

    private static let knownSet = Set(allKnown)

    /// Whether the reason is one Apple documents (or an observed spelling of one).
    public var isKnown: Bool { Self.knownSet.contains(self) }

    /// The reason for a metrics label: the raw string when known, otherwise `other`, so that a
    /// stray string cannot create unbounded label values.
    public var metricLabel: String { isKnown || self == .unknown ? rawValue : "other" }

    public var description: String { rawValue }
}
