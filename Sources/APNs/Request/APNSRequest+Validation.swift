import HeraldCore

extension APNSRequest {
    /// The largest `apns-collapse-id`, in UTF-8 bytes.
    public static let maxCollapseIDSize = 64

    /// Checks everything APNs would reject, or silently drop, before anything is sent: the token's
    /// format, the topic, the payload (present, a JSON object, within the push type's size, and a
    /// background push's `aps` holding `content-available: 1` and no alert, badge or sound), the
    /// collapse ID, the priority for the push type and the expiration.
    ///
    /// - Throws: ``APNSValidationError`` for the first problem found.
    public func validate() throws(APNSValidationError) {
        _ = try APNSDeviceToken.normalized(deviceToken)
        try validateContent()
    }

    /// What ``validate()`` checks besides the device token: what one payload sent to many tokens
    /// shares, checked once for all of them (``ValidationScope/deviceToken``).
    ///
    /// - Throws: ``APNSValidationError`` for the first problem found.
    public func validateContent() throws(APNSValidationError) {
        try APNSRequestChecks.topic(resolvedTopic, field: "topic")
        if pushType == .background {
            let object = try APNSRequestChecks.payloadObject(
                payload,
                limit: pushType.maxPayloadSize,
                pushType: pushType
            )
            try Self.checkBackgroundAPS(object["aps"])
        } else {
            // Only the shape matters here: checking it without building the value keeps
            // validation a small part of a push's cost.
            try APNSRequestChecks.payloadIsObject(payload, limit: pushType.maxPayloadSize, pushType: pushType)
        }
        if let collapseID {
            try APNSRequestChecks.collapseID(collapseID)
        }
        if !pushType.allows(effectivePriority) {
            let allowed = pushType.allowedPriorities.map(\.headerValue).joined(separator: " or ")
            let advice = pushType == .background ? " (Apple treats 10 as an error for background pushes)" : ""
            throw APNSValidationError(
                code: .badPriority,
                field: "priority",
                message: "priority \(effectivePriority.rawValue) is not allowed for \(pushType) pushes: "
                    + "use \(allowed)\(advice)"
            )
        }
        try APNSRequestChecks.expiration(expiration, required: false)
    }

    /// What ``APNSClient/send(_:checking:)`` checks before a push goes out.
    public enum ValidationScope: Sendable {
        /// Everything ``validate()`` checks.
        case everything
        /// The device token only. For a fan-out: each request is a copy, with its own token and
        /// id, of one whose ``validateContent()`` passed, so its topic, payload, collapse ID,
        /// priority and expiration were checked once for all of them.
        case deviceToken

        /// What each copy of `template` (with its own token and id) needs checked: the token only
        /// when the template's content passes; everything when it does not, so that each copy is
        /// refused with the template's error, as it would be alone.
        public init(copiesOf template: APNSRequest) {
            self = (try? template.validateContent()) == nil ? .everything : .deviceToken
        }
    }

    /// Checks what `scope` covers.
    func validate(_ scope: ValidationScope) throws(APNSValidationError) {
        switch scope {
        case .everything: try validate()
        case .deviceToken: _ = try APNSDeviceToken.normalized(deviceToken)
        }
    }

    private static func checkBackgroundAPS(_ aps: APNSJSONValue?) throws(APNSValidationError) {
        guard let aps = aps?.objectValue, aps["content-available"] == .integer(1) else {
            throw APNSValidationError(
                code: .badPayload,
                field: "payload.aps.content-available",
                message: "a background push needs \"aps\": {\"content-available\": 1}"
            )
        }
        for key in ["alert", "badge", "sound"] where aps[key] != nil {
            throw APNSValidationError(
                code: .badPayload,
                field: "payload.aps.\(key)",
                message: "a background push may not contain aps.\(key): send an alert push instead"
            )
        }
    }
}

/// Checks shared by device, broadcast and channel requests.
enum APNSRequestChecks {
    /// Bundle IDs and topics: letters, digits, `.`, `-` and `_` (they go into headers and paths).
    static func topic(_ topic: String, field: String) throws(APNSValidationError) {
        guard !topic.isEmpty else {
            throw APNSValidationError(
                code: .badTopic,
                field: field,
                message: "the topic is empty: set the app's bundle ID"
            )
        }
        let allowed = topic.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"):
                true
            default: false
            }
        }
        guard allowed, topic.utf8.count <= 255 else {
            throw APNSValidationError(
                code: .badTopic,
                field: field,
                message: "the topic is not a bundle ID: use letters, digits, '.', '-' and '_' only, at most 255"
            )
        }
    }

    /// Checks that `payload` is a non-empty JSON object within `limit` bytes, without parsing it
    /// into values: strict grammar, a `{` at the top, valid UTF-8.
    static func payloadIsObject(
        _ payload: [UInt8],
        limit: Int,
        pushType: APNSPushType
    ) throws(APNSValidationError) {
        try payloadSize(payload, limit: limit, pushType: pushType)
        let start = payload.firstIndex { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }
        // ASCII (the usual payload) is UTF-8 without building a String to find out.
        guard let start, payload[start] == UInt8(ascii: "{"),
            JSONValue.check(payload, maximumDepth: JSONValue.payloadMaximumDepth) == nil,
            payload.allSatisfy({ $0 < 0x80 }) || String(validating: payload, as: UTF8.self) != nil
        else {
            throw notAnObject
        }
    }

    private static let notAnObject = APNSValidationError(
        code: .payloadNotJSONObject,
        field: "payload",
        message: "the payload is not a JSON object: send UTF-8 JSON whose top level is {…}"
    )

    /// A non-empty payload within `limit` bytes.
    private static func payloadSize(
        _ payload: [UInt8],
        limit: Int,
        pushType: APNSPushType
    ) throws(APNSValidationError) {
        guard !payload.isEmpty else {
            throw APNSValidationError(
                code: .payloadEmpty,
                field: "payload",
                message: "the payload is empty: send a JSON object such as {\"aps\":{}}"
            )
        }
        guard payload.count <= limit else {
            throw APNSValidationError(
                code: .payloadTooLarge,
                field: "payload",
                message: "the payload is \(payload.count) bytes: \(pushType) pushes allow at most \(limit)"
            )
        }
    }

    /// A non-empty JSON object within `limit` bytes.
    static func payloadObject(
        _ payload: [UInt8],
        limit: Int,
        pushType: APNSPushType
    ) throws(APNSValidationError) -> [String: APNSJSONValue] {
        try payloadSize(payload, limit: limit, pushType: pushType)
        guard let value = try? APNSJSONValue(parsing: payload), let object = value.objectValue else {
            throw notAnObject
        }
        return object
    }

    static func collapseID(_ collapseID: String) throws(APNSValidationError) {
        let size = collapseID.utf8.count
        guard size > 0, size <= APNSRequest.maxCollapseIDSize else {
            throw APNSValidationError(
                code: .badCollapseID,
                field: "collapse_id",
                message: "the collapse ID is \(size) bytes: use 1 to \(APNSRequest.maxCollapseIDSize) bytes of UTF-8"
            )
        }
        guard isHeaderSafe(collapseID) else {
            throw APNSValidationError(
                code: .badCollapseID,
                field: "collapse_id",
                message: "the collapse ID contains control characters or surrounding spaces: remove them"
            )
        }
    }

    static func expiration(_ expiration: APNSExpiration, required: Bool) throws(APNSValidationError) {
        switch expiration {
        case .omitted where required:
            throw APNSValidationError(
                code: .badExpiration,
                field: "expiration",
                message: "broadcasts need an expiration: use 0 (do not store) or a time"
            )
        case .at(let date) where APNSExpiration.epochSeconds(date) <= 0:
            throw APNSValidationError(
                code: .badExpiration,
                field: "expiration",
                message: "the expiration is not after 1970-01-01T00:00:00Z: use a later time, or 0 to not store"
            )
        default:
            break
        }
    }

    /// No control characters and no leading or trailing whitespace, as HTTP/2 field values require.
    static func isHeaderSafe(_ value: String) -> Bool {
        guard let first = value.unicodeScalars.first, let last = value.unicodeScalars.last,
            !first.properties.isWhitespace, !last.properties.isWhitespace
        else { return value.isEmpty }
        return !value.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }
}
