import Foundation

/// One app Herald sends for: its bundle ID, which environments it uses, and its credentials.
///
/// Loaded from `HERALD_APPS_FILE` and from the single-app variables (`APNS_AUTH_KEY` or
/// `APNS_AUTH_KEY_FILE`, `APNS_KEY_ID`, `APPLE_TEAM_ID`, `TOPIC`, `APNS_ENVIRONMENT`) by ``load(environment:readFile:)``.
public struct APNSAppConfiguration: Sendable, CustomStringConvertible {
    public var bundleID: String
    /// The environment this entry is for; `nil` for both (a team key works in both).
    public var environment: APNSEnvironment?
    public var credentials: APNSCredentials
    /// Where a push that names no environment goes when the entry serves both (`APNS_ENVIRONMENT`).
    public var preferredEnvironment: APNSEnvironment

    public init(
        bundleID: String,
        environment: APNSEnvironment? = nil,
        credentials: APNSCredentials,
        preferredEnvironment: APNSEnvironment = .production
    ) {
        self.bundleID = bundleID
        self.environment = environment
        self.credentials = credentials
        self.preferredEnvironment = preferredEnvironment
    }

    /// Where a push that names no environment goes: the entry's own, else ``preferredEnvironment``.
    public var defaultEnvironment: APNSEnvironment {
        environment ?? preferredEnvironment
    }

    /// Whether this entry serves `environment`.
    public func serves(_ environment: APNSEnvironment) -> Bool {
        self.environment == nil || self.environment == environment
    }

    public var description: String {
        "\(bundleID) (\(environment?.rawValue ?? "production and sandbox")) \(credentials)"
    }

    /// Reads a file's text; throws when it cannot. The default reads from disk.
    public static func defaultReadFile(_ path: String) throws -> String {
        try APNSFiles.readText(path)
    }

    /// Whether a file exists at `path`.
    public static func defaultFileExists(_ path: String) -> Bool {
        FileManager.default.fileExists(atPath: path)
    }
}
