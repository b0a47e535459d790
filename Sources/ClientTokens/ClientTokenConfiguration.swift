import Foundation
public import HeraldCore
public import HeraldCrypto

/// The keys client tokens are verified with (HERALD_CLIENT_TOKEN_SECRET, HERALD_CLIENT_TOKEN_KEYS_FILE)
/// and the audience they must name (HERALD_CLIENT_TOKEN_AUDIENCE).
public struct ClientTokenConfiguration: Sendable, CustomStringConvertible {
    /// The HS256 secret; `nil`: HS256 tokens are refused.
    public var secret: [UInt8]?
    /// ES256 public keys by `kid`; empty: ES256 tokens are refused.
    public var publicKeys: [String: P256PublicKey]
    /// The `aud` every token must name.
    public var audience: String
    /// The apps each `kid` may sign for (the keys file's `{"kid": {"pem": …, "apps": […]}}` form);
    /// a kid not listed here may sign for any app.
    public var keyApps: [String: [String]] = [:]
    /// Whether every token must carry an `app` claim: set when Herald serves more than one app,
    /// so that a token minted for one app cannot act in another.
    public var requiresAppClaim = false

    /// The audience when HERALD_CLIENT_TOKEN_AUDIENCE is unset.
    public static let defaultAudience = "herald"
    /// The largest keys file read, in bytes, and the most keys it may hold.
    public static let maximumKeysFileBytes = 1 << 20
    public static let maximumKeys = 100

    public init(secret: [UInt8]? = nil, publicKeys: [String: P256PublicKey] = [:], audience: String = defaultAudience) {
        self.secret = secret
        self.publicKeys = publicKeys
        self.audience = audience
    }

    /// Whether any key is configured; without one, `/v1/client` refuses every request.
    public var isConfigured: Bool { secret != nil || !publicKeys.isEmpty }

    /// Reads the three settings; the keys file is read now, once.
    ///
    /// - Throws: ``HeraldCore/ConfigurationError`` naming the variable at fault and what to change
    ///   (never the secret's value).
    public static func load(environment: [String: String]) throws(ConfigurationError) -> ClientTokenConfiguration {
        var reader = EnvironmentReader(environment)
        var configuration = ClientTokenConfiguration()
        if let secret = reader.string(.clientTokenSecret) {
            let bytes = Array(secret.utf8)
            if bytes.count < ClientTokenLimits.minimumSecretBytes {
                reader.report(
                    "HERALD_CLIENT_TOKEN_SECRET is \(bytes.count) bytes long: use at least "
                        + "\(ClientTokenLimits.minimumSecretBytes) (e.g. from `openssl rand -hex 32`)"
                )
            } else if bytes.count > 1_024 {
                reader.report("HERALD_CLIENT_TOKEN_SECRET is longer than 1024 bytes: use a shorter secret")
            } else {
                configuration.secret = bytes
            }
        }
        if let path = reader.string(.clientTokenKeysFile) {
            do throws(ConfigurationError) {
                let file = try readKeysFile(path)
                configuration.publicKeys = file.keys
                configuration.keyApps = file.apps
            } catch {
                for problem in error.problems { reader.report(problem) }
            }
        }
        if let audience = reader.string(.clientTokenAudience) {
            let printable = audience.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F }
            if audience.utf8.count > 256 || !printable {
                reader.report("HERALD_CLIENT_TOKEN_AUDIENCE is not usable: use 1 to 256 printable ASCII characters")
            } else {
                configuration.audience = audience
            }
        }
        try reader.validate()
        return configuration
    }

    /// Reads HERALD_CLIENT_TOKEN_KEYS_FILE at `path`.
    static func readKeysFile(_ path: String) throws(ConfigurationError) -> ClientTokenKeysFile {
        let data: Data
        do {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            data = try handle.read(upToCount: maximumKeysFileBytes + 1) ?? Data()
        } catch {
            throw ConfigurationError(problems: [
                "HERALD_CLIENT_TOKEN_KEYS_FILE \(path) cannot be read: check the path and its permissions"
            ])
        }
        guard data.count <= maximumKeysFileBytes else {
            throw ConfigurationError(problems: [
                "HERALD_CLIENT_TOKEN_KEYS_FILE \(path) is larger than 1 MiB: it should hold only public keys"
            ])
        }
        return try ClientTokenKeysFile.parse([UInt8](data), source: "HERALD_CLIENT_TOKEN_KEYS_FILE \(path)")
    }

    /// Parses a keys file (``ClientTokenKeysFile/parse(_:source:)``) and returns its keys only.
    public static func parseKeys(_ bytes: [UInt8], source: String) throws(ConfigurationError) -> [String: P256PublicKey]
    {
        try ClientTokenKeysFile.parse(bytes, source: source).keys
    }

    public var description: String {
        "ClientTokenConfiguration(secret: \(secret == nil ? "unset" : "set"), keys: \(publicKeys.keys.sorted()), "
            + "audience: \(audience), bound kids: \(keyApps.keys.sorted()), app claim required: \(requiresAppClaim))"
    }
}
