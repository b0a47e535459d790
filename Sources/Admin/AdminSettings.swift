public import Foundation
public import HeraldCore
import HeraldCrypto

/// The admin console's settings: whether it is served (`HERALD_ADMIN`), whether its cookie may go
/// over plain HTTP (`HERALD_ADMIN_INSECURE_COOKIE`), how long a session lasts
/// (`HERALD_ADMIN_SESSION_TTL`) and the keys that may only read (`HERALD_ADMIN_READONLY_KEYS`).
public struct AdminSettings: Sendable {
    public var enabled = true
    public var insecureCookie = false
    public var sessionTTL: TimeInterval = 43_200
    /// SHA-256 of each read-only key.
    var readOnlyKeyDigests: [[UInt8]] = []

    public init() {}

    /// Reads the four variables, naming every problem at once.
    public static func load(environment: [String: String]) throws(ConfigurationError) -> AdminSettings {
        var reader = EnvironmentReader(environment)
        var settings = AdminSettings()
        settings.enabled = reader.flag(.admin, default: true)
        settings.insecureCookie = reader.flag(.adminInsecureCookie, default: false)
        settings.sessionTTL = TimeInterval(reader.integer(.adminSessionTTL) ?? 43_200)
        settings.readOnlyKeyDigests = reader.keys(.adminReadOnlyKeys).map { SHA256.hash(Array($0.utf8)) }
        try reader.validate()
        return settings
    }
}

/// The keys that sign in to the console, as their SHA-256 digests: `herald serve` provides the
/// API keys' (``init(apiKeyDigests:)``); the read-only ones are the console's own setting.
public struct AdminAPIKeys: Sendable {
    let apiKeyDigests: [[UInt8]]

    /// - Parameter apiKeyDigests: SHA-256 of each of `HERALD_API_KEYS`.
    public init(apiKeyDigests: [[UInt8]]) {
        self.apiKeyDigests = apiKeyDigests
    }
}

/// What a signed-in key may do.
enum AdminRole: String, Sendable, Hashable {
    /// One of `HERALD_API_KEYS`: reads and changes.
    case readWrite = "operator"
    /// One of `HERALD_ADMIN_READONLY_KEYS`: reads only.
    case readOnly = "read-only"

    var mayChange: Bool { self == .readWrite }
}

/// Which role a key or a stored key digest has, compared in constant time over every key.
struct AdminKeyring: Sendable {
    let operators: [[UInt8]]
    let readers: [[UInt8]]

    var isEmpty: Bool { operators.isEmpty && readers.isEmpty }

    func role(ofKey key: String) -> AdminRole? {
        role(ofDigest: SHA256.hash(Array(key.utf8)))
    }

    /// An operator's key wins when a key is in both lists.
    func role(ofDigest digest: [UInt8]) -> AdminRole? {
        var isOperator = false
        var isReader = false
        for known in operators { isOperator = ConstantTime.equal(known, digest) || isOperator }
        for known in readers { isReader = ConstantTime.equal(known, digest) || isReader }
        if isOperator { return .readWrite }
        return isReader ? .readOnly : nil
    }
}
