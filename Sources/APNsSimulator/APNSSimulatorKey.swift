import Foundation
public import HeraldCrypto

/// A provider-token key the simulator accepts: the Key ID a JWT names in `kid`, the public key its
/// ES256 signature must verify with, and optionally the team (`iss`) it belongs to.
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

    public init(keyID: String, teamID: String? = nil, publicKey: P256PublicKey) {
        self.keyID = keyID
        self.teamID = teamID
        self.publicKey = publicKey
    }

    /// Reads the key from PEM: a public key (`-----BEGIN PUBLIC KEY-----`), or the private key of
    /// the `.p8` file itself (its public half is used; the private half is not kept).
    ///
    /// - Throws: ``APNSSimulatorError`` when the text holds neither.
    public init(keyID: String, teamID: String? = nil, pemRepresentation: String) throws {
        if let publicKey = try? P256PublicKey(pemRepresentation: pemRepresentation) {
            self.init(keyID: keyID, teamID: teamID, publicKey: publicKey)
        } else if let privateKey = try? P256PrivateKey(pemRepresentation: pemRepresentation) {
            self.init(keyID: keyID, teamID: teamID, publicKey: privateKey.publicKey)
        } else {
            throw APNSSimulatorError(
                "the key \(keyID) is not a P-256 public key or .p8 private key in PEM form: "
                    + "use -----BEGIN PUBLIC KEY----- (openssl ec -in AuthKey.p8 -pubout) or the AuthKey_<KEYID>.p8 file"
            )
        }
    }

    /// Parses the `--key KEYID:PEM` argument of `herald simulator`: the Key ID, a colon, then the
    /// PEM text itself or the path of a file holding it (a public key or the `.p8` private key).
    /// This reads the file synchronously: call it at start-up.
    public static func parse(_ argument: String, teamID: String? = nil) throws -> APNSSimulatorKey {
        guard let colon = argument.firstIndex(of: ":") else {
            throw APNSSimulatorError(
                "--key \(argument) is not KEYID:PEM: give the Key ID, a colon, then a PEM file path"
            )
        }
        let keyID = String(argument[..<colon])
        let rest = String(argument[argument.index(after: colon)...])
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
        return try APNSSimulatorKey(keyID: keyID, teamID: teamID, pemRepresentation: pem)
    }

    public var description: String {
        "APNSSimulatorKey(keyID: \(keyID), teamID: \(teamID ?? "any"))"
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
