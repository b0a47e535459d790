public import APNs
public import Foundation

/// Whether a device may be sent to.
public enum DeviceStatus: String, Sendable, Hashable, CaseIterable {
    /// Registered and not known dead: included in audiences.
    case active
    /// APNs called the token dead (410 `Unregistered`, `BadDeviceToken`, `DeviceTokenNotForTopic`,
    /// `ExpiredToken`) after its last registration, or its user registered more devices than the
    /// quota allows (reason `evicted`): left out of every audience.
    case invalid
}

/// The Apple platform a device runs.
public enum DevicePlatform: String, Sendable, Hashable, CaseIterable {
    case ios, ipados, macos, watchos, tvos, visionos
}

/// A registered device of an app, keyed by (app, environment, token).
///
/// A device APNs called dead before it was ever registered is kept too (status ``DeviceStatus/invalid``,
/// no ``lastRegisteredAt``), so that `/v1/dead-tokens` lists every token APNs refused.
public struct Device: Sendable, Hashable {
    /// Lowercase hexadecimal.
    public var token: String
    /// The app's bundle ID.
    public var app: String
    public var environment: APNSEnvironment
    public var userID: String?
    /// Unique, in the order registered.
    public var tags: [String]
    public var locale: String?
    /// An IANA time zone name.
    public var timezone: String?
    public var appVersion: String?
    public var platform: DevicePlatform?
    public var status: DeviceStatus
    /// APNs' reason (`Unregistered`, `BadDeviceToken`, …) while ``status`` is invalid.
    public var invalidReason: String?
    /// Since when the token is dead: APNs' 410 timestamp, or the time of APNs' answer.
    public var invalidAt: Date?
    /// When Herald learned the token is dead (what `/v1/dead-tokens` orders by and retention counts from).
    public var invalidRecordedAt: Date?
    /// The notification whose send found it dead.
    public var invalidNotificationID: UUID?
    /// When the device was first registered to its current user (a token that moves to another
    /// user is new to that user).
    public var createdAt: Date
    public var updatedAt: Date
    /// The request time of the latest registration; `nil` for a token known only from APNs' answer.
    public var lastRegisteredAt: Date?

    public init(
        token: String,
        app: String,
        environment: APNSEnvironment,
        userID: String? = nil,
        tags: [String] = [],
        locale: String? = nil,
        timezone: String? = nil,
        appVersion: String? = nil,
        platform: DevicePlatform? = nil,
        status: DeviceStatus = .active,
        invalidReason: String? = nil,
        invalidAt: Date? = nil,
        invalidRecordedAt: Date? = nil,
        invalidNotificationID: UUID? = nil,
        createdAt: Date,
        updatedAt: Date,
        lastRegisteredAt: Date?
    ) {
        self.token = token
        self.app = app
        self.environment = environment
        self.userID = userID
        self.tags = tags
        self.locale = locale
        self.timezone = timezone
        self.appVersion = appVersion
        self.platform = platform
        self.status = status
        self.invalidReason = invalidReason
        self.invalidAt = invalidAt
        self.invalidRecordedAt = invalidRecordedAt
        self.invalidNotificationID = invalidNotificationID
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.lastRegisteredAt = lastRegisteredAt
    }
}

/// One device's registration, validated, with its app and environment resolved.
///
/// A registration replaces the device's metadata (`PUT` semantics): a field left out is cleared.
/// Its ``registeredAt`` (the server's clock when the request arrived) decides the dead-token rule:
/// a device APNs called dead at T becomes active again only from a registration stamped after T.
public struct DeviceRegistration: Sendable, Hashable {
    public var token: String
    public var app: String
    public var environment: APNSEnvironment
    public var userID: String?
    public var tags: [String]
    public var locale: String?
    public var timezone: String?
    public var appVersion: String?
    public var platform: DevicePlatform?
    /// The request time on the server's clock.
    public var registeredAt: Date

    public init(
        token: String,
        app: String,
        environment: APNSEnvironment,
        userID: String? = nil,
        tags: [String] = [],
        locale: String? = nil,
        timezone: String? = nil,
        appVersion: String? = nil,
        platform: DevicePlatform? = nil,
        registeredAt: Date
    ) {
        self.token = token
        self.app = app
        self.environment = environment
        self.userID = userID
        self.tags = tags
        self.locale = locale
        self.timezone = timezone
        self.appVersion = appVersion
        self.platform = platform
        self.registeredAt = registeredAt
    }
}

/// What a registration did: the device as stored afterwards, and whether it was new.
public struct RegisteredDevice: Sendable, Hashable {
    public var device: Device
    /// No device with this (app, environment, token) existed before.
    public var created: Bool
    /// The user the device was registered to before; `nil` when it was new or had no user.
    public var previousUserID: String?

    public init(device: Device, created: Bool, previousUserID: String? = nil) {
        self.device = device
        self.created = created
        self.previousUserID = previousUserID
    }
}

/// APNs' answer that a token is dead, as the sender reports it.
public struct DeviceInvalidation: Sendable, Hashable {
    public var token: String
    /// APNs' reason: `Unregistered`, `BadDeviceToken`, `DeviceTokenNotForTopic`, `ExpiredToken`.
    public var reason: String
    /// APNs' 410 timestamp, or the time of the answer when APNs gave none.
    public var invalidAt: Date
    /// When Herald recorded the answer.
    public var recordedAt: Date
    /// The notification whose send got the answer.
    public var notificationID: UUID?

    public init(token: String, reason: String, invalidAt: Date, recordedAt: Date, notificationID: UUID? = nil) {
        self.token = token
        self.reason = reason
        self.invalidAt = invalidAt
        self.recordedAt = recordedAt
        self.notificationID = notificationID
    }
}

/// A device that became invalid (it was active, or unknown): what the `device.invalidated`
/// webhook event carries.
public struct DeviceInvalidatedEvent: Sendable, Hashable {
    public var token: String
    public var app: String
    public var environment: APNSEnvironment
    public var reason: String
    public var invalidAt: Date

    public init(token: String, app: String, environment: APNSEnvironment, reason: String, invalidAt: Date) {
        self.token = token
        self.app = app
        self.environment = environment
        self.reason = reason
        self.invalidAt = invalidAt
    }
}

/// A device token registered to one user and now to another (a new sign-in on the same phone):
/// what the `device.reassigned` webhook event carries.
public struct DeviceReassignedEvent: Sendable, Hashable {
    public var token: String
    public var app: String
    public var environment: APNSEnvironment
    public var fromUserID: String
    public var toUserID: String

    public init(token: String, app: String, environment: APNSEnvironment, fromUserID: String, toUserID: String) {
        self.token = token
        self.app = app
        self.environment = environment
        self.fromUserID = fromUserID
        self.toUserID = toUserID
    }
}
