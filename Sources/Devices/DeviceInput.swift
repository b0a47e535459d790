public import APNs
import Foundation
public import HeraldCore

/// The limits on device requests.
public enum DeviceLimits {
    /// Devices per `POST /v1/devices/batch`.
    public static let maximumBatch = 1_000
    /// The largest `PUT` body.
    public static let maximumBodyBytes = 16 << 10
    /// The largest batch body: 1,000 devices of up to about 4 KB each.
    public static let maximumBatchBodyBytes = 4 << 20
    /// Tags per device, and characters per tag.
    public static let maximumTags = 50
    public static let maximumTagCharacters = 64
    /// Bytes of `app` and `user_id`.
    public static let maximumNameBytes = 255
    /// Bytes of `locale`, `timezone` and `app_version`.
    public static let maximumShortBytes = 64
    /// Nesting of arrays and objects in a body.
    public static let maximumDepth = 8
    /// Active devices per user per app and environment unless `HERALD_CLIENT_MAX_DEVICES` says
    /// otherwise (``DeviceStore/maximumDevicesPerUser``).
    public static let defaultMaximumDevicesPerUser = 20
}

/// A validated device body (`PUT /v1/devices/{token}`, or one entry of a batch), its app and
/// environment not resolved yet.
///
/// ```json
/// {"app": "com.example.app", "environment": "production", "user_id": "u1", "tags": ["news"],
///  "locale": "en_GB", "timezone": "Europe/London", "app_version": "2.1", "platform": "ios"}
/// ```
public struct DeviceInput: Sendable, Hashable {
    /// `nil`: the default app, as for `/v1/notifications`.
    public var app: String?
    /// `nil`: the app's default environment.
    public var environment: APNSEnvironment?
    public var userID: String?
    public var tags: [String]
    public var locale: String?
    public var timezone: String?
    public var appVersion: String?
    public var platform: DevicePlatform?

    public init(
        app: String? = nil,
        environment: APNSEnvironment? = nil,
        userID: String? = nil,
        tags: [String] = [],
        locale: String? = nil,
        timezone: String? = nil,
        appVersion: String? = nil,
        platform: DevicePlatform? = nil
    ) {
        self.app = app
        self.environment = environment
        self.userID = userID
        self.tags = tags
        self.locale = locale
        self.timezone = timezone
        self.appVersion = appVersion
        self.platform = platform
    }

    /// The fields of a device body.
    public static let fields: Set<String> = [
        "app", "environment", "user_id", "tags", "locale", "timezone", "app_version", "platform",
    ]

    /// Parses a `PUT` body (an empty body is an empty object).
    ///
    /// - Parameters:
    ///   - allowUserID: `false` for app-facing routes, where the user comes from the credential:
    ///     `user_id` is then an unknown field.
    ///   - tagPolicy: for app-facing routes, the tags a client may set; a tag it does not allow is
    ///     403 `tag_not_allowed` naming it (`tags[2]`). `nil`: any tag (the API key).
    public static func parse(
        _ body: [UInt8],
        allowUserID: Bool = true,
        tagPolicy: ClientTagPolicy? = nil
    ) throws(DeviceError) -> DeviceInput {
        guard body.count <= DeviceLimits.maximumBodyBytes else {
            throw DeviceError(
                .tooLarge,
                code: "body_too_large",
                message: "the body is \(body.count) bytes: a device takes at most \(DeviceLimits.maximumBodyBytes)"
            )
        }
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return DeviceInput() }
        let object = try jsonObject(body, example: "{\"user_id\": \"u1\", \"tags\": [\"news\"]}")
        return try parse(object: object, allowUserID: allowUserID, tagPolicy: tagPolicy, path: "")
    }

    /// Checks `body` strictly (no duplicate keys or trailing commas, bounded depth) and parses it
    /// into a JSON object.
    public static func jsonObject(_ body: [UInt8], example: String) throws(DeviceError) -> [String: Any] {
        if let fault = JSONValue.check(body, maximumDepth: DeviceLimits.maximumDepth) {
            switch fault.kind {
            case .tooDeep:
                throw .invalid(
                    "too_deep",
                    "the body nests arrays and objects more than \(DeviceLimits.maximumDepth) levels deep",
                    field: fault.pathText
                )
            case .duplicateKey:
                throw .invalid(
                    "duplicate_key",
                    "the body repeats a key at line \(fault.line), column \(fault.column): \(fault.message)",
                    field: fault.pathText
                )
            case .syntax, .invalidUTF8:
                throw .invalid(
                    "invalid_json",
                    "the body is not valid JSON at line \(fault.line), column \(fault.column): \(fault.message)",
                    field: nil
                )
            }
        }
        guard let parsed = try? JSONSerialization.jsonObject(with: Data(body), options: []) else {
            throw .invalid("invalid_json", "the body is not valid UTF-8 JSON: send a JSON object", field: nil)
        }
        guard let object = parsed as? [String: Any] else {
            throw .invalid("invalid_json", "the body is not a JSON object: send \(example)", field: nil)
        }
        return object
    }

    /// Parses one device object; `path` prefixes the fields named in errors (`devices[3].`).
    public static func parse(
        object: [String: Any],
        allowUserID: Bool = true,
        tagPolicy: ClientTagPolicy? = nil,
        extraFields: Set<String> = [],
        path: String
    ) throws(DeviceError) -> DeviceInput {
        let known = (allowUserID ? fields : fields.subtracting(["user_id"])).union(extraFields)
        for key in object.keys.sorted() where !known.contains(key) {
            throw .invalid(
                "unknown_field",
                "\"\(String(key.prefix(64)))\" is not a field of a device: use \(known.sorted().joined(separator: ", "))",
                field: path + String(key.prefix(64))
            )
        }
        var input = DeviceInput()
        input.app = try string(object, "app", path: path, maximumBytes: DeviceLimits.maximumNameBytes)
        if input.app?.isEmpty == true {
            throw .invalid("invalid_app", "app must be the bundle ID of a configured app", field: path + "app")
        }
        if let name = try string(object, "environment", path: path, maximumBytes: 16) {
            guard name == "production" || name == "sandbox", let environment = APNSEnvironment(rawValue: name) else {
                throw .invalid(
                    "invalid_environment",
                    "environment must be \"production\" or \"sandbox\"",
                    field: path + "environment"
                )
            }
            input.environment = environment
        }
        if allowUserID {
            input.userID = try string(object, "user_id", path: path, maximumBytes: DeviceLimits.maximumNameBytes)
            if input.userID?.isEmpty == true {
                throw .invalid(
                    "invalid_user_id",
                    "user_id must not be empty: leave it out or send null for a device without a user",
                    field: path + "user_id"
                )
            }
        }
        input.tags = try tags(object["tags"], policy: tagPolicy, path: path)
        input.locale = try string(object, "locale", path: path, maximumBytes: DeviceLimits.maximumShortBytes)
        input.timezone = try string(object, "timezone", path: path, maximumBytes: DeviceLimits.maximumShortBytes)
        if let timezone = input.timezone, !TimeZoneNames.isIANA(timezone) {
            throw .invalid(
                "invalid_timezone",
                "timezone must be an IANA time zone name such as Europe/Paris or America/New_York",
                field: path + "timezone"
            )
        }
        input.appVersion = try string(
            object,
            "app_version",
            path: path,
            maximumBytes: DeviceLimits.maximumShortBytes
        )
        if let name = try string(object, "platform", path: path, maximumBytes: 16) {
            guard let platform = DevicePlatform(rawValue: name) else {
                throw .invalid(
                    "invalid_platform",
                    "platform must be one of \(DevicePlatform.allCases.map(\.rawValue).joined(separator: ", "))",
                    field: path + "platform"
                )
            }
            input.platform = platform
        }
        return input
    }

    /// The token of a path or body, lowercase, checked as `/v1/notifications` checks tokens.
    public static func token(_ text: String, field: String = "token") throws(DeviceError) -> String {
        do {
            return try APNSDeviceToken.normalized(text)
        } catch {
            throw .invalid("invalid_token", error.message, field: field)
        }
    }

    // MARK: Fields

    private static func string(
        _ object: [String: Any],
        _ key: String,
        path: String,
        maximumBytes: Int
    ) throws(DeviceError) -> String? {
        guard let value = object[key], !(value is NSNull) else { return nil }
        guard let text = value as? String else {
            throw .invalid("invalid_\(key)", "\(key) must be a string", field: path + key)
        }
        guard text.utf8.count <= maximumBytes else {
            throw .invalid(
                "invalid_\(key)",
                "\(key) is \(text.utf8.count) bytes: send at most \(maximumBytes)",
                field: path + key
            )
        }
        return text
    }

    private static func tags(_ value: Any?, policy: ClientTagPolicy?, path: String) throws(DeviceError) -> [String] {
        guard let value, !(value is NSNull) else { return [] }
        guard let array = value as? [Any] else {
            throw .invalid("invalid_tags", "tags must be an array of strings", field: path + "tags")
        }
        guard array.count <= DeviceLimits.maximumTags else {
            throw .invalid(
                "too_many_tags",
                "tags has \(array.count) entries: a device takes at most \(DeviceLimits.maximumTags)",
                field: path + "tags"
            )
        }
        var tags: [String] = []
        var seen = Set<String>()
        for (index, element) in array.enumerated() {
            guard let tag = element as? String, (1...DeviceLimits.maximumTagCharacters).contains(tag.count),
                tag.utf8.count <= 4 * DeviceLimits.maximumTagCharacters
            else {
                throw .invalid(
                    "invalid_tag",
                    "tags[\(index)] must be a string of 1 to \(DeviceLimits.maximumTagCharacters) characters",
                    field: path + "tags[\(index)]"
                )
            }
            if let policy, !policy.allows(tag) {
                throw .tagNotAllowed(tag, field: path + "tags[\(index)]")
            }
            // A tag listed twice is one tag.
            if seen.insert(tag).inserted { tags.append(tag) }
        }
        return tags
    }
}

/// IANA time zone names, as the system's tz database knows them.
enum TimeZoneNames {
    static let known: Set<String> = Set(TimeZone.knownTimeZoneIdentifiers).union(["UTC", "Etc/UTC"])

    static func isIANA(_ name: String) -> Bool {
        // Without a tz database (a minimal container), Foundation's own parse is the best check left.
        if known.count > 2 { return known.contains(name) }
        return TimeZone(identifier: name) != nil && name.contains("/")
    }
}
