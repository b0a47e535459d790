/// Device token checks shared by every sender (RELAY.md: hexadecimal, either case, even length,
/// 64 to 200 characters; sent to APNs in lowercase).
public enum APNSDeviceToken {
    /// The lengths accepted, in characters. Today's tokens are 64; Apple warns not to assume that.
    public static let allowedLengths = 64...200

    /// `token` in lowercase when it is well-formed.
    ///
    /// - Throws: ``APNSValidationError`` with code ``APNSValidationError/Code/badDeviceToken``,
    ///   whose message states the rule without repeating the token.
    public static func normalized(_ token: String) throws(APNSValidationError) -> String {
        let utf8 = token.utf8
        guard allowedLengths.contains(utf8.count) else {
            throw APNSValidationError(
                code: .badDeviceToken,
                field: "device_token",
                message: "the device token has \(utf8.count) characters: use the 64 to 200 hexadecimal characters "
                    + "the app received from registerForRemoteNotifications"
            )
        }
        guard utf8.count.isMultiple(of: 2) else {
            throw APNSValidationError(
                code: .badDeviceToken,
                field: "device_token",
                message: "the device token has an odd number of characters: use the complete hexadecimal token"
            )
        }
        let scan = utf8.withContiguousStorageIfAvailable(Self.scan) ?? Self.scan(Array(utf8))
        guard scan.isHex else {
            throw APNSValidationError(
                code: .badDeviceToken,
                field: "device_token",
                message: "the device token contains characters other than 0-9 and a-f: send it hex-encoded"
            )
        }
        // Tokens almost always arrive in lowercase already: keep the string rather than copy it.
        return scan.hasUppercase ? token.lowercased() : token
    }

    private static func scan(_ bytes: some Collection<UInt8>) -> (isHex: Bool, hasUppercase: Bool) {
        var hasUppercase = false
        for byte in bytes {
            guard isHexDigit(byte) else { return (false, false) }
            if byte <= UInt8(ascii: "F"), byte >= UInt8(ascii: "A") { hasUppercase = true }
        }
        return (true, hasUppercase)
    }

    /// The first eight characters and an ellipsis: enough to correlate log lines, not enough to
    /// push to the device.
    public static func shortened(_ token: String) -> String {
        // Bytes, not characters: tokens are ASCII, and this runs for every relay access-log line.
        // A non-ASCII character cut in two is repaired, which is good enough for a log.
        token.utf8.count <= 8 ? token : String(decoding: token.utf8.prefix(8), as: UTF8.self) + "…"
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
            UInt8(ascii: "A")...UInt8(ascii: "F"):
            true
        default: false
        }
    }
}
