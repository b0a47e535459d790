import Foundation
public import HeraldCore

/// Names the refusals of `/v1/channels`.
public enum ChannelsDomain: RefusalDomain {}

/// Why `/v1/channels` refused a request: its input, or what APNs answered
/// (``ChannelError/apns(_:)``). HeraldFeature maps its kind to the HTTP status, the same for every
/// feature.
public typealias ChannelError = Refusal<ChannelsDomain>

extension Refusal where Domain == ChannelsDomain {
    /// 400 `invalid_<field>` (dots become underscores) naming the field.
    static func invalid(_ field: String, _ message: String) -> Self {
        .invalid("invalid_\(field.replacingOccurrences(of: ".", with: "_"))", message, field: field)
    }

    /// 404 `unknown_channel`: the path's id is not a channel id.
    static let notAChannelID = ChannelError(
        .notFound,
        code: "unknown_channel",
        message: "that is not a channel id: use the id POST /v1/channels answered, percent-encoded in the "
            + "path or written in base64url",
        field: "id"
    )
}
