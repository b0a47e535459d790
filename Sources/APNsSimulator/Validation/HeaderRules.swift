import APNs
import HeraldCore

/// The value checks APNs applies to single header fields and bodies, shared by device pushes,
/// broadcasts and channel management.
enum HeaderRules {
    /// The longest `apns-collapse-id`, in UTF-8 bytes.
    static let maxCollapseIDSize = 64

    /// `apns-id` and `apns-request-id`: a UUID in the 8-4-4-4-12 form. Apple's text asks for
    /// lowercase; either case is accepted here, as clients commonly send `uuidgen` output
    /// (UNCONFIRMED how APNs treats uppercase).
    static func isUUID(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard utf8.count == 36 else { return false }
        for (index, byte) in utf8.enumerated() {
            switch index {
            case 8, 13, 18, 23:
                guard byte == UInt8(ascii: "-") else { return false }
            default:
                guard isHexDigit(byte) else { return false }
            }
        }
        return true
    }

    /// `apns-expiration`: whole UNIX seconds, `0` included. `nil` when it is anything else.
    static func expiration(_ text: String) -> Int64? {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.count <= 18, utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return Int64(text)
    }

    /// A bundle ID or topic: letters, digits, `.`, `-`, `_`, at most 255 bytes (else `BadTopic`).
    static func isWellFormedTopic(_ topic: String) -> Bool {
        let utf8 = topic.utf8
        return !utf8.isEmpty && utf8.count <= 255
            && utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"):
                    true
                default: false
                }
            }
    }

    /// A device token in a path: 64 to 200 hexadecimal characters, an even number, either case.
    static func isWellFormedDeviceToken(_ token: String) -> Bool {
        let utf8 = token.utf8
        return APNSDeviceToken.allowedLengths.contains(utf8.count) && utf8.count.isMultiple(of: 2)
            && utf8.allSatisfy(isHexDigit)
    }

    /// Checks a JSON body: empty (`PayloadEmpty`), over `limit` bytes (413 `PayloadTooLarge`), or
    /// not a JSON object (`malformedReason`). The syntax check does not decode anything.
    static func checkPayload(
        _ body: [UInt8],
        limit: Int,
        malformedReason: APNSErrorReason
    ) -> SimulatorRejection? {
        if body.isEmpty { return .badRequest(.payloadEmpty) }
        if body.count > limit { return .payloadTooLarge }
        if !isJSONObject(body) { return .badRequest(malformedReason) }
        return nil
    }

    /// Whether `body` is strict JSON whose top level is an object.
    static func isJSONObject(_ body: [UInt8]) -> Bool {
        guard let first = body.first(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }),
            first == UInt8(ascii: "{")
        else { return false }
        return JSONValue.check(body, maximumDepth: JSONValue.payloadMaximumDepth) == nil
    }

    /// A known push type suffix (`.voip`, `.push-type.liveactivity`, …) that `topic` ends with.
    static func pushTypeSuffix(of topic: String) -> String? {
        knownSuffixes.first { topic.hasSuffix($0) && topic.utf8.count > $0.utf8.count }
    }

    /// Every non-empty topic suffix, longest first.
    private static let knownSuffixes: [String] = Array(
        Set(APNSPushType.allCases.map(\.topicSuffix).filter { !$0.isEmpty })
    ).sorted { $0.utf8.count > $1.utf8.count }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
            UInt8(ascii: "A")...UInt8(ascii: "F"):
            true
        default: false
        }
    }
}
