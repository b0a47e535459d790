import APNs
import HeraldCore

extension Refusal where Domain == ChannelsDomain {
    /// APNs' answer, or the trouble reaching it, as this API's refusal; APNs' reason stays in the
    /// message.
    ///
    /// `ChannelNotRegistered` is 404 `unknown_channel`, `CannotCreateChannelConfig` 409
    /// `channel_limit_reached`, `FeatureNotEnabled` 422 `broadcast_not_enabled`, other 400s 400
    /// `apns_rejected`, 413 `payload_too_large`, a refused provider token 502
    /// `apns_credentials_rejected`, 429 and 5xx and connection trouble 503 `apns_unavailable` with
    /// `Retry-After`.
    static func apns(_ error: any Error) -> Self {
        if let rejection = error as? APNSRejection {
            return apns(rejection)
        }
        if let validation = error as? APNSValidationError {
            return validation.code == .payloadTooLarge
                ? .tooLarge("payload_too_large", validation.message, field: nil)
                : .invalid("invalid_broadcast", validation.message, field: nil)
        }
        if let unexpected = error as? APNSUnexpectedResponseError {
            return Self(.upstreamRejected, code: "apns_unexpected_response", message: unexpected.description)
        }
        return Self(
            .unavailable,
            code: "apns_unavailable",
            message: "APNs cannot be reached right now: try again later",
            retryAfter: 5
        )
    }

    private static func apns(_ rejection: APNSRejection) -> Self {
        let reason = rejection.reason.rawValue
        switch rejection.reason {
        case .channelNotRegistered:
            return Self(
                .notFound,
                code: "unknown_channel",
                message: "APNs has no such channel for this app and environment (ChannelNotRegistered): "
                    + "GET /v1/channels lists them",
                field: "id"
            )
        case .cannotCreateChannelConfig:
            return Self(
                .limitReached,
                code: "channel_limit_reached",
                message: "APNs refused a new channel (CannotCreateChannelConfig): the app has its 10,000 "
                    + "channels in this environment; delete finished ones"
            )
        case .featureNotEnabled:
            return Self(
                .notConfigured,
                code: "broadcast_not_enabled",
                message: "APNs says the app lacks the Broadcast Capability (FeatureNotEnabled): enable it for "
                    + "the App ID on developer.apple.com"
            )
        default:
            break
        }
        switch rejection.status {
        case 413:
            return .tooLarge(
                "payload_too_large",
                "APNs refused the payload as too large (\(reason)): a broadcast carries at most 5120 bytes",
                field: nil
            )
        case 400:
            return .invalid("apns_rejected", "APNs refused the request: \(reason)", field: nil)
        case 403:
            return Self(
                .upstreamRejected,
                code: "apns_credentials_rejected",
                message: "APNs refused Herald's credentials for this app (\(reason)): check its key, team and "
                    + "bundle ID"
            )
        case 429, 500...:
            return Self(
                .unavailable,
                code: "apns_unavailable",
                message: "APNs did not take the request (\(rejection.status) \(reason)): try again later",
                retryAfter: 5
            )
        default:
            return Self(
                .upstreamRejected,
                code: "apns_rejected",
                message: "APNs answered \(rejection.status) \(reason)"
            )
        }
    }
}
