public import APNs
import Foundation
public import HeraldCrypto

/// A provider-token key the simulator accepts: the Key ID a JWT names in `kid`, the public key its
/// ES256 signature must verify with, and optionally the team (`iss`) it belongs to and the one
/// environment it is restricted to.
///
/// ```swift
/// let key = try APNSSimulatorKey(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", pemRepresentation: pem)
/// ```
public struct APNSSimulatorKey: Sendable, Hashable, CustomStringConvertible {
    public var keyID: String
    /// The team whose tokens the key signs; `nil` takes the simulator's
    /// ``APNSSimulator/Configuration/teamID``.
    public var teamID: String?
    public var publicKey: P256PublicKey
    /// The environment the key is restricted to, as Apple lets a team-scoped key be; `nil` for
    /// both. A simulator playing the other environment (``APNSSimulator/Configuration/environment``)
    /// refuses its tokens with 403 `BadEnvironmentKeyIdInToken`.
    public var environment: APNSEnvironment?

    public init(keyID: String, teamID: String? = nil, publicKey: P256PublicKey, environment: APNSEnvironment? = nil) {
        self.keyID = keyID
        self.teamID = teamID
        self.publicKey = publicKey
        self.environment = environment
    }

    /// Reads the key from PEM: a public key (`-----BEGIN PUBLIC KEY-----`), or the private key of
    /// the `.p8` file itself (its public half is used; the private half is not kept).
    ///
    /// - Throws: ``APNSSimulatorError`` when the text holds neither.
    public init(
        keyID: String,
        teamID: String? = nil,
        pemRepresentation: String,
        environment: APNSEnvironment? = nil
    ) throws {
        if let publicKey = try? P256PublicKey(pemRepresentation: pemRepresentation) {
            self.init(keyID: keyID, teamID: teamID, publicKey: publicKey, environment: environment)
        } else if let privateKey = try? P256PrivateKey(pemRepresentation: pemRepresentation) {
            self.init(keyID: keyID, teamID: teamID, publicKey: privateKey.publicKey, environment: environment)
        } else {
            throw APNSSimulatorError(
                "the key \(keyID) is not a P-256 public key or .p8 private key in PEM form: "
                    + "use -----BEGIN PUBLIC KEY----- (openssl ec -in AuthKey.p8 -pubout) or the AuthKey_<KEYID>.p8 file"
            )
        }
    }

    /// Parses the `--key KEYID[@ENVIRONMENT]:PEM` argument of `herald simulator`: the Key ID,
    /// optionally `@sandbox` or `@production` for a key restricted to that environment, a colon,
    /// then the PEM text itself or the path of a file holding it (a public key or the `.p8`
    /// private key). This reads the file synchronously: call it at start-up.
    public static func parse(_ argument: String, teamID: String? = nil) throws -> APNSSimulatorKey {
        guard let colon = argument.firstIndex(of: ":") else {
            throw APNSSimulatorError(
                "--key \(argument) is not KEYID:PEM: give the Key ID, a colon, then a PEM file path"
            )
        }
        var keyID = String(argument[..<colon])
        let rest = String(argument[argument.index(after: colon)...])
        var environment: APNSEnvironment?
        if let at = keyID.firstIndex(of: "@") {
            let name = String(keyID[keyID.index(after: at)...])
            guard let restricted = APNSEnvironment(name: name) else {
                throw APNSSimulatorError(
                    "--key \(keyID): '\(name)' is not an environment: use KEYID@sandbox:PEM or KEYID@production:PEM"
                )
            }
            environment = restricted
            keyID = String(keyID[..<at])
        }
        guard !keyID.isEmpty, keyID.utf8.count <= 64, !rest.isEmpty else {
            throw APNSSimulatorError("--key needs KEYID:PEM with a Key ID and a PEM file path (or PEM text)")
        }
        let pem: String
        if rest.contains("-----BEGIN") {
            pem = rest
        } else {
            guard let data = FileManager.default.contents(atPath: rest), let text = String(data: data, encoding: .utf8)
            else {
                throw APNSSimulatorError("--key \(keyID): \(rest) cannot be read: check the path of the PEM file")
            }
            pem = text
        }
        return try APNSSimulatorKey(keyID: keyID, teamID: teamID, pemRepresentation: pem, environment: environment)
    }

    public var description: String {
        "APNSSimulatorKey(keyID: \(keyID), teamID: \(teamID ?? "any"), environment: \(environment.map { "\($0)" } ?? "both"))"
    }
}

/// A simulator set-up problem (configuration, certificate, key); the message says what to change.
public struct APNSSimulatorError: Error, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
