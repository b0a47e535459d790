/// A request that cannot be sent as given, found before anything goes to APNs.
///
/// ``message`` is one sentence a person can act on; ``field`` names the part of the request that is
/// wrong, in the API's snake_case (`device_token`, `payload`, `collapse_id`, …). Neither contains
/// device tokens, payload contents or keys.
public struct APNSValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem it is; compare with the static members.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String

        private init(_ name: String) {
            self.name = name
        }

        /// The device token is not 64–200 hexadecimal characters of even length.
        public static let badDeviceToken = Code("bad_device_token")
        /// The topic or bundle ID is empty or contains characters a header or path cannot carry.
        public static let badTopic = Code("bad_topic")
        /// The payload is empty.
        public static let payloadEmpty = Code("payload_empty")
        /// The payload is not a JSON object.
        public static let payloadNotJSONObject = Code("payload_not_json_object")
        /// The payload is larger than the push type allows.
        public static let payloadTooLarge = Code("payload_too_large")
        /// The payload is JSON but not what this push type requires.
        public static let badPayload = Code("bad_payload")
        /// The collapse ID is empty, longer than 64 bytes, or contains control characters.
        public static let badCollapseID = Code("bad_collapse_id")
        /// The priority is not allowed for this push type.
        public static let badPriority = Code("bad_priority")
        /// The expiration is missing where required, before 1970, or not allowed for the channel.
        public static let badExpiration = Code("bad_expiration")
        /// The broadcast channel ID is empty or not base64.
        public static let badChannelID = Code("bad_channel_id")
        /// The push type is not one APNs knows (`apns-push-type`).
        public static let badPushType = Code("bad_push_type")

        public var description: String { name }
    }

    public let code: Code
    /// The request field at fault, e.g. `device_token`, `payload`, `payload.aps.event`.
    public let field: String
    /// What is wrong and how to fix it.
    public let message: String

    public init(code: Code, field: String, message: String) {
        self.code = code
        self.field = field
        self.message = message
    }

    public var description: String { "\(field): \(message)" }
}
