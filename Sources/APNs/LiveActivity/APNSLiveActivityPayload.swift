public import Foundation
public import HeraldCore

/// The body of a Live Activity push (ActivityKit; APNS.md §6), to a device token or a broadcast
/// channel.
///
/// ```swift
/// let payload = APNSLiveActivityPayload.update(
///     contentState: ["score": "2-1", "minute": 67],
///     timestamp: Date(),
///     staleDate: Date().addingTimeInterval(600)
/// )
/// // {"aps":{"content-state":{"minute":67,"score":"2-1"},"event":"update","stale-date":…,"timestamp":…}}
/// ```
///
/// Times are whole seconds since 1970. Encoding fails with ``APNSValidationError`` when a `start`
/// lacks `attributes-type`, `attributes` or `alert`, when `content-state` or `attributes` is not
/// a JSON object, or when `input-push-token`/`input-push-channel` appear outside a `start`.
public struct APNSLiveActivityPayload: APNSPayload, Hashable, Encodable {
    public var event: APNSLiveActivityEvent
    /// When the content was produced; the system shows the newest.
    public var timestamp: Date
    /// The app's `ActivityAttributes.ContentState`, as the system's default JSON decoder will
    /// decode it (a Swift `Date` field is seconds since 2001-01-01 there).
    public var contentState: APNSJSONValue
    /// `attributes-type`: the `ActivityAttributes` type name (`start` only).
    public var attributesType: String?
    /// The static attributes (`start` only).
    public var attributes: APNSJSONValue?
    public var alert: APNSLiveActivityAlert?
    /// `stale-date`: when the activity is shown as out of date.
    public var staleDate: Date?
    /// `dismissal-date`: when an ended activity leaves the Lock Screen (a past date: now).
    public var dismissalDate: Date?
    /// `relevance-score`: the highest is shown in the Dynamic Island.
    public var relevanceScore: Double?
    /// `input-push-token: 1` in a `start` (iOS 18+): the started activity gets an update token.
    public var inputPushToken: Bool
    /// `input-push-channel` in a `start` (iOS 18+): the started activity subscribes to a channel.
    public var inputPushChannel: String?
    /// The app's own keys, beside `aps`. A key named `aps` makes encoding fail.
    public var custom: [String: APNSJSONValue]

    public init(
        event: APNSLiveActivityEvent,
        timestamp: Date,
        contentState: APNSJSONValue,
        attributesType: String? = nil,
        attributes: APNSJSONValue? = nil,
        alert: APNSLiveActivityAlert? = nil,
        staleDate: Date? = nil,
        dismissalDate: Date? = nil,
        relevanceScore: Double? = nil,
        inputPushToken: Bool = false,
        inputPushChannel: String? = nil,
        custom: [String: APNSJSONValue] = [:]
    ) {
        self.event = event
        self.timestamp = timestamp
        self.contentState = contentState
        self.attributesType = attributesType
        self.attributes = attributes
        self.alert = alert
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore
        self.inputPushToken = inputPushToken
        self.inputPushChannel = inputPushChannel
        self.custom = custom
    }

    /// A push-to-start payload: the attributes type and values, the first content state and the
    /// alert Apple requires for a start.
    public static func start(
        attributesType: String,
        attributes: APNSJSONValue,
        contentState: APNSJSONValue,
        alert: APNSLiveActivityAlert,
        timestamp: Date,
        staleDate: Date? = nil,
        relevanceScore: Double? = nil,
        inputPushToken: Bool = false,
        inputPushChannel: String? = nil
    ) -> APNSLiveActivityPayload {
        APNSLiveActivityPayload(
            event: .start,
            timestamp: timestamp,
            contentState: contentState,
            attributesType: attributesType,
            attributes: attributes,
            alert: alert,
            staleDate: staleDate,
            relevanceScore: relevanceScore,
            inputPushToken: inputPushToken,
            inputPushChannel: inputPushChannel
        )
    }

    /// An update with new content.
    public static func update(
        contentState: APNSJSONValue,
        timestamp: Date,
        alert: APNSLiveActivityAlert? = nil,
        staleDate: Date? = nil,
        relevanceScore: Double? = nil
    ) -> APNSLiveActivityPayload {
        APNSLiveActivityPayload(
            event: .update,
            timestamp: timestamp,
            contentState: contentState,
            alert: alert,
            staleDate: staleDate,
            relevanceScore: relevanceScore
        )
    }

    /// The end, with final content and when to remove it from the Lock Screen.
    public static func end(
        contentState: APNSJSONValue,
        timestamp: Date,
        dismissalDate: Date? = nil,
        alert: APNSLiveActivityAlert? = nil
    ) -> APNSLiveActivityPayload {
        APNSLiveActivityPayload(
            event: .end,
            timestamp: timestamp,
            contentState: contentState,
            alert: alert,
            dismissalDate: dismissalDate
        )
    }

    /// Checks the rules in the type's documentation.
    public func validate() throws(APNSValidationError) {
        guard contentState.objectValue != nil else {
            throw problem("content-state", "content-state must be a JSON object matching the app's ContentState")
        }
        if event == .start {
            guard let attributesType, !attributesType.isEmpty else {
                throw problem("attributes-type", "a start needs attributes-type: the ActivityAttributes type's name")
            }
            guard attributes?.objectValue != nil else {
                throw problem("attributes", "a start needs attributes: a JSON object of the static attributes")
            }
            guard alert != nil else {
                throw problem("alert", "a start needs an alert with a title and body")
            }
        } else {
            if inputPushToken {
                throw problem("input-push-token", "input-push-token is only for a start event")
            }
            if inputPushChannel != nil {
                throw problem("input-push-channel", "input-push-channel is only for a start event")
            }
            if let attributes, attributes.objectValue == nil {
                throw problem("attributes", "attributes must be a JSON object")
            }
        }
    }

    private func problem(_ key: String, _ message: String) -> APNSValidationError {
        APNSValidationError(code: .badPayload, field: "payload.aps.\(key)", message: message)
    }

    /// The payload as a JSON value, checked first (``validate()``): what ``encodedPayload()``
    /// writes, keys sorted. Numbers are written as `JSONEncoder` writes them: a whole
    /// `relevance-score` without a fraction; `content-state` and `attributes` as given.
    ///
    /// - Throws: ``APNSValidationError``; `EncodingError` for a custom key named `aps` or a
    ///   critical sound's volume outside 0...1.
    public func jsonValue() throws -> APNSJSONValue {
        try validate()
        var aps: [String: APNSJSONValue] = [
            "event": .string(event.rawValue),
            "timestamp": .integer(APNSPayloadEncoding.epochSeconds(timestamp)),
            "content-state": contentState,
        ]
        if let attributesType { aps["attributes-type"] = .string(attributesType) }
        if let attributes { aps["attributes"] = attributes }
        if let alert { aps["alert"] = try alert.jsonValue() }
        if let staleDate { aps["stale-date"] = .integer(APNSPayloadEncoding.epochSeconds(staleDate)) }
        if let dismissalDate { aps["dismissal-date"] = .integer(APNSPayloadEncoding.epochSeconds(dismissalDate)) }
        if let relevanceScore { aps["relevance-score"] = APNSPayloadEncoding.number(relevanceScore) }
        if inputPushToken { aps["input-push-token"] = .integer(1) }
        if let inputPushChannel { aps["input-push-channel"] = .string(inputPushChannel) }
        var members: [String: APNSJSONValue] = ["aps": .object(aps)]
        for (key, value) in custom {
            guard key != "aps" else { throw APNSPayloadEncoding.customKeyNamedAPS(value) }
            members[key] = value
        }
        return .object(members)
    }

    /// The body, written directly from ``jsonValue()`` (no `JSONEncoder`: this is every Live
    /// Activity push's payload).
    public func encodedPayload() throws -> [UInt8] {
        try jsonValue().jsonBytes()
    }

    public func encode(to encoder: any Encoder) throws {
        try jsonValue().encode(to: encoder)
    }
}
