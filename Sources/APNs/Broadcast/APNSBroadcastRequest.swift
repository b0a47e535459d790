public import Foundation
import HeraldCore

/// A Live Activity update or end sent to every subscriber of a broadcast channel:
/// `POST /4/broadcasts/apps/<bundle ID>` on the push host (APNS.md §7).
///
/// Unlike a device push: the path carries the **bare** bundle ID (no `.push-type.liveactivity`,
/// else `TopicDisallowed`), there is no `apns-topic`, `apns-expiration` and `apns-priority` are
/// required, the payload may be 5120 bytes, and a channel created with
/// ``APNSChannelMessageStoragePolicy/noMessageStored`` accepts only `apns-expiration: 0`.
/// Broadcasts cannot start an activity.
///
/// ```swift
/// let request = try APNSBroadcastRequest(
///     bundleID: "com.example.app",
///     channelID: channel,
///     storagePolicy: .noMessageStored,
///     payload: APNSLiveActivityPayload.update(contentState: ["score": "2-1"], timestamp: Date())
/// )
/// ```
public struct APNSBroadcastRequest: Sendable, Hashable {
    /// The largest payload, in bytes.
    public static let maxPayloadSize = 5120

    public var bundleID: String
    public var channelID: APNSChannelID
    /// The channel's policy, which decides the allowed expirations.
    public var storagePolicy: APNSChannelMessageStoragePolicy
    public var payload: [UInt8]
    /// Required: ``APNSExpiration/immediately`` (the only choice for policy 0) or a time.
    public var expiration: APNSExpiration
    public var priority: APNSPriority
    /// The optional `apns-request-id`.
    public var requestID: UUID?

    public init(
        bundleID: String,
        channelID: APNSChannelID,
        storagePolicy: APNSChannelMessageStoragePolicy,
        payload: [UInt8],
        expiration: APNSExpiration = .immediately,
        priority: APNSPriority = .immediately,
        requestID: UUID? = nil
    ) {
        self.bundleID = bundleID
        self.channelID = channelID
        self.storagePolicy = storagePolicy
        self.payload = payload
        self.expiration = expiration
        self.priority = priority
        self.requestID = requestID
    }

    /// A broadcast whose body is `payload` encoded.
    public init(
        bundleID: String,
        channelID: APNSChannelID,
        storagePolicy: APNSChannelMessageStoragePolicy,
        payload: some APNSPayload,
        expiration: APNSExpiration = .immediately,
        priority: APNSPriority = .immediately,
        requestID: UUID? = nil
    ) throws {
        self.init(
            bundleID: bundleID,
            channelID: channelID,
            storagePolicy: storagePolicy,
            payload: try payload.encodedPayload(),
            expiration: expiration,
            priority: priority,
            requestID: requestID
        )
    }

    /// Checks the bundle ID (bare), the channel ID, the payload (a JSON object of at most 5120 bytes
    /// whose `aps.event` is `update` or `end`) and the expiration (present; `0` for policy 0).
    public func validate() throws(APNSValidationError) {
        try APNSBroadcastChecks.bareBundleID(bundleID)
        try channelID.validate()
        let object = try APNSRequestChecks.payloadObject(
            payload,
            limit: Self.maxPayloadSize,
            pushType: .liveActivity
        )
        switch object["aps"]?["event"]?.stringValue {
        case "update", "end":
            break
        case "start":
            throw APNSValidationError(
                code: .badPayload,
                field: "payload.aps.event",
                message: "broadcasts cannot start a Live Activity: start it on the device or by push-to-start "
                    + "with input-push-channel"
            )
        default:
            throw APNSValidationError(
                code: .badPayload,
                field: "payload.aps.event",
                message: "a broadcast needs aps.event set to update or end"
            )
        }
        try APNSRequestChecks.expiration(expiration, required: true)
        if storagePolicy == .noMessageStored, expiration != .immediately {
            throw APNSValidationError(
                code: .badExpiration,
                field: "expiration",
                message: "the channel stores no messages (policy 0), so APNs accepts only expiration 0: "
                    + "send it with expiration 0"
            )
        }
    }

    /// `/4/broadcasts/apps/<bundle ID>`.
    public var path: String { "/4/broadcasts/apps/\(bundleID)" }

    /// The header fields (``APNSRequestHeaderFields``, the one place that builds them), with
    /// `authorization: bearer <authorization>` when given.
    public func headers(authorization: String?) -> [APNSHTTPHeader] {
        httpRequest(authorization: authorization).headers
    }

    /// The HTTP/2 request. Call ``validate()`` first.
    public func httpRequest(authorization: String?) -> APNSHTTPRequest {
        APNSRequestHeaderFields(self, authorizationHeaderValue: authorization.map { "bearer " + $0 }).httpRequest
    }
}

enum APNSBroadcastChecks {
    static func bareBundleID(_ bundleID: String) throws(APNSValidationError) {
        try APNSRequestChecks.topic(bundleID, field: "bundle_id")
        if bundleID.hasSuffix(APNSPushType.liveActivity.topicSuffix) {
            throw APNSValidationError(
                code: .badTopic,
                field: "bundle_id",
                message: "broadcasts use the bare bundle ID: remove \(APNSPushType.liveActivity.topicSuffix)"
            )
        }
    }
}
