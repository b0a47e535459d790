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
                configuration.publicKeys = try readKeysFile(path)
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
    static func readKeysFile(_ path: String) throws(ConfigurationError) -> [String: P256PublicKey] {
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
        return try parseKeys([UInt8](data), source: "HERALD_CLIENT_TOKEN_KEYS_FILE \(path)")
    }

    /// Parses `{"kid": "-----BEGIN PUBLIC KEY-----…", …}`: every key a P-256 public key in PEM.
    public static func parseKeys(_ bytes: [UInt8], source: String) throws(ConfigurationError) -> [String: P256PublicKey]
    {
        if let fault = JSONSyntax.check(bytes, maximumDepth: 2) {
            throw ConfigurationError(problems: ["\(source) is not valid JSON: \(fault)"])
        }
        guard let object = try? JSONDecoder().decode([String: String].self, from: Data(bytes)) else {
            throw ConfigurationError(problems: [
                "\(source) must be one JSON object mapping each kid to a PEM public key: {\"kid\": \"-----BEGIN PUBLIC KEY-----\\n…\"}"
            ])
        }
        guard !object.isEmpty, object.count <= maximumKeys else {
            throw ConfigurationError(problems: [
                "\(source) must hold 1 to \(maximumKeys) keys; it holds \(object.count)"
            ])
        }
        var keys: [String: P256PublicKey] = [:]
        var problems: [String] = []
        for (kid, pem) in object.sorted(by: { $0.key < $1.key }) {
            guard ClientTokenVerifier.isAcceptableKeyID(kid) else {
                problems.append(
                    "\(source): the kid \"\(kid.prefix(40))\" is not usable: use 1 to "
                        + "\(ClientTokenLimits.maximumKeyIDBytes) printable ASCII characters"
                )
                continue
            }
            do {
                keys[kid] = try P256PublicKey(pemRepresentation: pem)
            } catch {
                problems.append(
                    "\(source): the key of kid \"\(kid)\" is not a P-256 public key in PEM "
                        + "(-----BEGIN PUBLIC KEY-----): \(error)"
                )
            }
        }
        if !problems.isEmpty { throw ConfigurationError(problems: problems) }
        return keys
    }

    public var description: String {
        "ClientTokenConfiguration(secret: \(secret == nil ? "unset" : "set"), keys: \(publicKeys.keys.sorted()), "
            + "audience: \(audience))"
    }
}
