public import Foundation

/// One notification for one device: everything APNs needs except credentials.
///
/// A request is a plain value; nothing is checked until ``validate()`` (which ``APNSClient`` calls
/// before sending), so a request can be built field by field.
///
/// ```swift
/// let request = try APNSRequest(
///     deviceToken: token,
///     pushType: .alert,
///     topic: .bundleID("com.example.app"),
///     payload: APNSAlertPayload(alert: APNSAlert(title: "Hello", body: "World"))
/// )
/// let result = try await client.send(request)
/// ```
public struct APNSRequest: Sendable, Hashable {
    /// The hexadecimal device token (either case; sent in lowercase).
    public var deviceToken: String
    public var pushType: APNSPushType
    public var topic: APNSTopic
    /// The `apns-id`, sent as a lowercase UUID; APNs echoes it in its answer.
    public var id: UUID
    public var expiration: APNSExpiration
    /// `nil` sends the push type's ``APNSPushType/defaultPriority``.
    public var priority: APNSPriority?
    /// The `apns-collapse-id`: notifications with the same value replace each other on the device.
    public var collapseID: String?
    /// The JSON body.
    public var payload: [UInt8]

    public init(
        deviceToken: String,
        pushType: APNSPushType,
        topic: APNSTopic,
        payload: [UInt8],
        id: UUID = APNSIdentifier.next(),
        expiration: APNSExpiration = .omitted,
        priority: APNSPriority? = nil,
        collapseID: String? = nil
    ) {
        self.deviceToken = deviceToken
        self.pushType = pushType
        self.topic = topic
        self.payload = payload
        self.id = id
        self.expiration = expiration
        self.priority = priority
        self.collapseID = collapseID
    }

    /// A request whose body is `payload` encoded.
    ///
    /// - Throws: what the payload's encoding throws (an invalid typed payload).
    public init(
        deviceToken: String,
        pushType: APNSPushType,
        topic: APNSTopic,
        payload: some APNSPayload,
        id: UUID = APNSIdentifier.next(),
        expiration: APNSExpiration = .omitted,
        priority: APNSPriority? = nil,
        collapseID: String? = nil
    ) throws {
        self.init(
            deviceToken: deviceToken,
            pushType: pushType,
            topic: topic,
            payload: try payload.encodedPayload(),
            id: id,
            expiration: expiration,
            priority: priority,
            collapseID: collapseID
        )
    }

    /// The `apns-topic` header value.
    public var resolvedTopic: String { topic.resolved(for: pushType) }

    /// The `apns-priority` that will be sent.
    public var effectivePriority: APNSPriority { priority ?? pushType.defaultPriority }

    /// The `apns-id` header value: the canonical lowercase UUID.
    public var apnsIDHeaderValue: String { APNSIdentifier.lowercaseString(id) }
}
