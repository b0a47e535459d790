public import APNs
import Audiences
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
    /// Tags per device, and characters per tag: what an audience may name.
    public static let maximumTags = AudienceLimits.maximumTags
    public static let maximumTagCharacters = AudienceLimits.tagLength.upperBound
    /// Bytes of `app` and `user_id`: a user id as long as an audience may name.
    public static let maximumNameBytes = AudienceLimits.maximumUserIDBytes
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
        var reader = try Reader(
            body: body,
            maximumDepth: DeviceLimits.maximumDepth,
            what: "a device",
            example: "{\"user_id\": \"u1\", \"tags\": [\"news\"]}",
            emptyIsObject: true
        )
        return try parse(&reader, allowUserID: allowUserID, tagPolicy: tagPolicy)
    }

    /// The reader of device bodies.
    public typealias Reader = JSONObjectReader<DeviceDomain>

    /// Parses one device object; its fields are named in errors with the reader's path
    /// (`devices[3].tags[2]`).
    ///
    /// - Parameter extraFields: fields of the object that are not a device's, read by the caller
    ///   (a batch entry's `token`).
    public static func parse(
        _ object: inout Reader,
        allowUserID: Bool = true,
        tagPolicy: ClientTagPolicy? = nil,
        extraFields: Set<String> = []
    ) throws(DeviceError) -> DeviceInput {
        try object.rejectUnknown((allowUserID ? fields : fields.subtracting(["user_id"])).union(extraFields))
        var input = DeviceInput()
        input.app = try object.string("app", maximumBytes: DeviceLimits.maximumNameBytes)
        if input.app?.isEmpty == true {
            throw .invalid("invalid_app", "app must be the bundle ID of a configured app", field: object.field("app"))
        }
        if let name = try object.string("environment", maximumBytes: 16) {
            guard name == "production" || name == "sandbox", let environment = APNSEnvironment(rawValue: name) else {
                throw .invalid(
                    "invalid_environment",
                    "environment must be \"production\" or \"sandbox\"",
                    field: object.field("environment")
                )
            }
            input.environment = environment
        }
        if allowUserID {
            input.userID = try object.string("user_id", maximumBytes: DeviceLimits.maximumNameBytes)
            if input.userID?.isEmpty == true {
                throw .invalid(
                    "invalid_user_id",
                    "user_id must not be empty: leave it out or send null for a device without a user",
                    field: object.field("user_id")
                )
            }
        }
        input.tags = try tags(&object, policy: tagPolicy)
        input.locale = try object.string("locale", maximumBytes: DeviceLimits.maximumShortBytes)
        input.timezone = try object.string("timezone", maximumBytes: DeviceLimits.maximumShortBytes)
        if let timezone = input.timezone, !TimeZoneNames.isIANA(timezone) {
            throw .invalid(
                "invalid_timezone",
                "timezone must be an IANA time zone name such as Europe/Paris or America/New_York",
                field: object.field("timezone")
            )
        }
        input.appVersion = try object.string("app_version", maximumBytes: DeviceLimits.maximumShortBytes)
        if let name = try object.string("platform", maximumBytes: 16) {
            guard let platform = DevicePlatform(rawValue: name) else {
                throw .invalid(
                    "invalid_platform",
                    "platform must be one of \(DevicePlatform.allCases.map(\.rawValue).joined(separator: ", "))",
                    field: object.field("platform")
                )
            }
            input.platform = platform
        }
        try object.finish()
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

    private static func tags(_ object: inout Reader, policy: ClientTagPolicy?) throws(DeviceError) -> [String] {
        guard
            let array = try object.array(
                "tags",
                maximumCount: DeviceLimits.maximumTags,
                code: "invalid_tags",
                message: "tags must be an array of strings"
            )
        else { return [] }
        var tags: [String] = []
        var seen = Set<String>()
        for (index, element) in array.enumerated() {
            let field = object.field("tags") + "[\(index)]"
            guard case .string(let tag) = element, (1...DeviceLimits.maximumTagCharacters).contains(tag.count),
                tag.utf8.count <= 4 * DeviceLimits.maximumTagCharacters
            else {
                throw .invalid(
                    "invalid_tag",
                    "\(field) must be a string of 1 to \(DeviceLimits.maximumTagCharacters) characters",
                    field: field
                )
            }
            if let policy, !policy.allows(tag) {
                throw .tagNotAllowed(tag, field: field)
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
