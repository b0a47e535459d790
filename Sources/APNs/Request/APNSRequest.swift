public import Foundation
import HeraldCore

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
    public var deviceToken: String {
        get { storage.fields.deviceToken }
        set { storage.fields.deviceToken = newValue }
    }
    public var pushType: APNSPushType {
        get { storage.fields.pushType }
        set { storage.fields.pushType = newValue }
    }
    public var topic: APNSTopic {
        get { storage.fields.topic }
        set { storage.fields.topic = newValue }
    }
    /// The `apns-id`, sent as a lowercase UUID; APNs echoes it in its answer.
    public var id: UUID {
        get { storage.fields.id }
        set { storage.fields.id = newValue }
    }
    public var expiration: APNSExpiration {
        get { storage.fields.expiration }
        set { storage.fields.expiration = newValue }
    }
    /// `nil` sends the push type's ``APNSPushType/defaultPriority``.
    public var priority: APNSPriority? {
        get { storage.fields.priority }
        set { storage.fields.priority = newValue }
    }
    /// The `apns-collapse-id`: notifications with the same value replace each other on the device.
    public var collapseID: String? {
        get { storage.fields.collapseID }
        set { storage.fields.collapseID = newValue }
    }
    /// The JSON body.
    public var payload: [UInt8] {
        get { storage.fields.payload }
        set { storage.fields.payload = newValue }
    }

    /// The fields, in one box shared by copies until one of them changes: a push is handed from
    /// layer to layer and kept for retries, and a copy is then one retain, not one per field.
    private var storage: CopyOnWriteBox<Fields>

    private struct Fields: Sendable, Hashable {
        var deviceToken: String
        var pushType: APNSPushType
        var topic: APNSTopic
        var id: UUID
        var expiration: APNSExpiration
        var priority: APNSPriority?
        var collapseID: String?
        var payload: [UInt8]
    }

    public static func == (lhs: APNSRequest, rhs: APNSRequest) -> Bool {
        lhs.storage.sharesStorage(with: rhs.storage) || lhs.storage.fields == rhs.storage.fields
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(storage.fields)
    }

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
        storage = CopyOnWriteBox(
            Fields(
                deviceToken: deviceToken,
                pushType: pushType,
                topic: topic,
                id: id,
                expiration: expiration,
                priority: priority,
                collapseID: collapseID,
                payload: payload
            )
        )
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
