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
        settings.enabled = reader.choice(.admin, default: true, Self.flag, allowed: "1 or 0")
        settings.insecureCookie = reader.choice(.adminInsecureCookie, default: false, Self.flag, allowed: "1 or 0")
        settings.sessionTTL = TimeInterval(reader.integer(.adminSessionTTL) ?? 43_200)
        if let text = reader.string(.adminReadOnlyKeys) {
            for (index, part) in text.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
                let key = part.trimmingCharacters(in: .whitespaces)
                if key.isEmpty { continue }
                let printable = key.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F }
                guard (16...512).contains(key.count), printable else {
                    reader.report(
                        "HERALD_ADMIN_READONLY_KEYS entry \(index + 1) is not usable: use 16 to 512 printable ASCII "
                            + "characters without spaces or commas per key (e.g. from `openssl rand -hex 32`)"
                    )
                    continue
                }
                settings.readOnlyKeyDigests.append(SHA256.hash(Array(key.utf8)))
            }
        }
        try reader.validate()
        return settings
    }

    static func flag(_ text: String) -> Bool? {
        switch text {
        case "1": true
        case "0": false
        default: nil
        }
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
        for known in operators { isOperator = Self.equal(known, digest) || isOperator }
        for known in readers { isReader = Self.equal(known, digest) || isReader }
        if isOperator { return .readWrite }
        return isReader ? .readOnly : nil
    }

    /// Equality whose time depends only on the lengths.
    static func equal(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }
}
