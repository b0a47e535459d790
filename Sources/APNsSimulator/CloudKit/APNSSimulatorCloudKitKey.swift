import Foundation
public import HeraldCrypto

/// A CloudKit server-to-server key the simulator accepts (`--cloudkit-key KEYID:PEM`): requests
/// signed by its private half with this Key ID pass the signature check.
public struct APNSSimulatorCloudKitKey: Sendable, Hashable {
    public var keyID: String
    public var publicKey: P256PublicKey
    /// The absolute path of the file the key was read from, when that file holds the private key:
    /// what a client signs with (`CLOUDKIT_PRIVATE_KEY_FILE` in the simulator's exports).
    public var privateKeyFile: String?

    public init(keyID: String, publicKey: P256PublicKey, privateKeyFile: String? = nil) {
        self.keyID = keyID
        self.publicKey = publicKey
        self.privateKeyFile = privateKeyFile
    }

    /// Parses `KEYID:PEM`: the Key ID, a colon, then PEM text or the path of a PEM file holding
    /// the public key (`openssl ec -in eckey.pem -pubout`) or the private key. Reads the file
    /// synchronously: call it at start-up.
    public static func parse(_ argument: String) throws -> APNSSimulatorCloudKitKey {
        guard let colon = argument.firstIndex(of: ":") else {
            throw APNSSimulatorError(
                "--cloudkit-key \(argument.prefix(80)) is not KEYID:PEM: give the Key ID, a colon, then a PEM file"
            )
        }
        let keyID = String(argument[..<colon])
        let rest = String(argument[argument.index(after: colon)...])
        guard !keyID.isEmpty, keyID.utf8.count <= 128, !rest.isEmpty else {
            throw APNSSimulatorError("--cloudkit-key needs KEYID:PEM with a Key ID (1 to 128 characters) and a PEM")
        }
        var pem = rest
        var file: String?
        if !rest.contains("-----BEGIN") {
            guard let data = FileManager.default.contents(atPath: rest), let text = String(data: data, encoding: .utf8)
            else {
                throw APNSSimulatorError(
                    "--cloudkit-key \(keyID): \(rest) cannot be read: check the path of the PEM file"
                )
            }
            pem = text
            file = URL(fileURLWithPath: rest).standardizedFileURL.path
        }
        if let publicKey = try? P256PublicKey(pemRepresentation: pem) {
            return APNSSimulatorCloudKitKey(keyID: keyID, publicKey: publicKey)
        }
        if let privateKey = try? P256PrivateKey(pemRepresentation: pem) {
            return APNSSimulatorCloudKitKey(keyID: keyID, publicKey: privateKey.publicKey, privateKeyFile: file)
        }
        throw APNSSimulatorError(
            "--cloudkit-key \(keyID) is not a P-256 key in PEM form: use the public key (openssl ec -in eckey.pem "
                + "-pubout) or the private key file"
        )
    }
}
