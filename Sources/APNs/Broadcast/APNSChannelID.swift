/// A broadcast channel's id: an opaque base64 string APNs assigns at creation (its length is not
/// fixed). Sent in `apns-channel-id`.
public struct APNSChannelID: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Checks the id is non-empty base64 (standard or URL alphabet, optional padding).
    public func validate() throws(APNSValidationError) {
        let valid =
            !rawValue.isEmpty && rawValue.utf8.count <= 1024
            && rawValue.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="),
                    UInt8(ascii: "-"), UInt8(ascii: "_"):
                    true
                default: false
                }
            }
        guard valid else {
            throw APNSValidationError(
                code: .badChannelID,
                field: "channel_id",
                message: "the channel ID is not the base64 text APNs returned when the channel was created"
            )
        }
    }

    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}
