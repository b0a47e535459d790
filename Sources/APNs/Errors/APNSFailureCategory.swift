/// What a refused request means for the sender: retry, drop the device token, fix the setup, or
/// fix the request.
public struct APNSFailureCategory: Sendable, Hashable, CustomStringConvertible {
    private let name: String

    private init(_ name: String) {
        self.name = name
    }

    /// Try again later: 429 `TooManyRequests`, 500, 503, `IdleTimeout`.
    public static let retryable = APNSFailureCategory("retryable")
    /// The device token will never work again for this topic: 410 `Unregistered`/`ExpiredToken`,
    /// `BadDeviceToken`, `DeviceTokenNotForTopic`. Stop sending to it (check the environment first:
    /// a sandbox token sent to production is also `BadDeviceToken`).
    public static let deviceTokenInvalid = APNSFailureCategory("device_token_invalid")
    /// The broadcast channel does not exist: `ChannelNotRegistered`.
    public static let channelInvalid = APNSFailureCategory("channel_invalid")
    /// `ExpiredProviderToken`: make a new provider token and send once more.
    public static let providerTokenExpired = APNSFailureCategory("provider_token_expired")
    /// Credentials, topic or capability are wrong; no request will succeed until an operator
    /// fixes the setup (`BadTopic`, `InvalidProviderToken`, `BadCertificate`, `Forbidden`, …).
    public static let configuration = APNSFailureCategory("configuration")
    /// This request is wrong and will be refused again as it is (`PayloadTooLarge`,
    /// `BadCollapseId`, `BadPriority`, …).
    public static let invalidRequest = APNSFailureCategory("invalid_request")
    /// Neither the reason nor the status says which of the above it is.
    public static let unknown = APNSFailureCategory("unknown")

    public var description: String { name }
}

extension APNSErrorReason {
    /// What this reason means; for reasons this version does not know, `status` decides
    /// (429/500/502/503/504 retryable, 410 token invalid, 403 configuration, other 4xx invalid
    /// request).
    public func category(status: Int) -> APNSFailureCategory {
        if let category = Self.categories[self] { return category }
        switch status {
        case 429, 500, 502, 503, 504: return .retryable
        case 410: return .deviceTokenInvalid
        case 401, 403: return .configuration
        case 400..<500: return .invalidRequest
        default: return .unknown
        }
    }

    /// Whether the device token should be dropped.
    public var isDeviceTokenInvalid: Bool { Self.categories[self] == .deviceTokenInvalid }

    private static let categories: [APNSErrorReason: APNSFailureCategory] = {
        var table: [APNSErrorReason: APNSFailureCategory] = [:]
        for reason: APNSErrorReason in [
            .tooManyRequests, .tooManyProviderTokenUpdates, .internalServerError, .serviceUnavailable,
            .serviceUnavailableWithSpace, .shutdown, .idleTimeout,
        ] {
            table[reason] = .retryable
        }
        for reason: APNSErrorReason in [.unregistered, .expiredToken, .badDeviceToken, .deviceTokenNotForTopic] {
            table[reason] = .deviceTokenInvalid
        }
        table[.channelNotRegistered] = .channelInvalid
        table[.expiredProviderToken] = .providerTokenExpired
        for reason: APNSErrorReason in [
            .badTopic, .topicDisallowed, .missingTopic, .invalidProviderToken, .missingProviderToken,
            .badCertificate, .badCertificateEnvironment, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken,
            .badEnvironmentKeyInToken, .forbidden, .topicMismatch, .featureNotEnabled,
        ] {
            table[reason] = .configuration
        }
        for reason: APNSErrorReason in [
            .payloadTooLarge, .badCollapseId, .badExpirationDate, .badMessageId, .badPriority, .duplicateHeaders,
            .invalidPushType, .missingDeviceToken, .payloadEmpty, .badPath, .methodNotAllowed, .missingChannelId,
            .badChannelId, .badRequestParams, .badRequestPayload, .missingPushType, .cannotCreateChannelConfig,
        ] {
            table[reason] = .invalidRequest
        }
        return table
    }()
}
