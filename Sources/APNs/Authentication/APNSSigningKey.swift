import Foundation
public import HeraldCrypto

/// A token-authentication key from Apple's developer site: the `.p8` file's P-256 private key, its
/// 10-character Key ID and the team's 10-character Team ID.
///
/// ``description`` shows the ids, never the key.
///
/// ```swift
/// let key = try APNSSigningKey(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", pemRepresentation: pem)
/// ```
public struct APNSSigningKey: Sendable, CustomStringConvertible, CustomReflectable {
    public let keyID: String
    public let teamID: String
    public let privateKey: P256PrivateKey

    /// - Throws: ``APNSCredentialError`` when an id is not 10 ASCII capital letters or digits.
    public init(keyID: String, teamID: String, privateKey: P256PrivateKey) throws(APNSCredentialError) {
        guard Self.isAppleID(keyID) else {
            throw APNSCredentialError(
                code: .invalidKeyID,
                message: "the key ID is not 10 capital letters or digits: copy it from the key's page on "
                    + "developer.apple.com (it is also in the file name AuthKey_<KEYID>.p8)"
            )
        }
        guard Self.isAppleID(teamID) else {
            throw APNSCredentialError(
                code: .invalidTeamID,
                message: "the team ID is not 10 capital letters or digits: copy it from Membership details "
                    + "on developer.apple.com"
            )
        }
        self.keyID = keyID
        self.teamID = teamID
        self.privateKey = privateKey
    }

    /// Reads the key from the `.p8` file's contents (PKCS#8 PEM).
    ///
    /// - Throws: ``APNSCredentialError``; its message does not repeat `pemRepresentation`.
    public init(keyID: String, teamID: String, pemRepresentation: String) throws(APNSCredentialError) {
        let key: P256PrivateKey
        do {
            key = try P256PrivateKey(pemRepresentation: pemRepresentation)
        } catch {
            throw APNSCredentialError(
                code: .invalidKey,
                message: "the key is not a P-256 private key in PEM form: use the whole AuthKey_<KEYID>.p8 file, "
                    + "from -----BEGIN PRIVATE KEY----- to -----END PRIVATE KEY-----"
            )
        }
        try self.init(keyID: keyID, teamID: teamID, privateKey: key)
    }

    /// Reads the key from a `.p8` file. This reads the file synchronously: call it at start-up,
    /// not on a hot path.
    public init(keyID: String, teamID: String, pemFile path: String) throws(APNSCredentialError) {
        try self.init(keyID: keyID, teamID: teamID, pemRepresentation: try APNSFiles.readText(path))
    }

    /// Whether `id` looks like Apple's Key and Team IDs: 10 characters `A`–`Z`, `0`–`9`.
    public static func isAppleID(_ id: String) -> Bool {
        id.utf8.count == 10
            && id.utf8.allSatisfy { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || (48...57).contains($0) }
    }

    public var description: String { "APNSSigningKey(keyID: \(keyID), teamID: \(teamID))" }

    public var customMirror: Mirror {
        Mirror(self, children: ["keyID": keyID, "teamID": teamID, "privateKey": "<redacted>"])
    }
}

/// Reading small credential files at start-up.
enum APNSFiles {
    static func readText(_ path: String) throws(APNSCredentialError) -> String {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw APNSCredentialError(
                code: .unreadableFile,
                message: "\(path) cannot be read: check that the file exists and this user may read it"
            )
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw APNSCredentialError(
                code: .unreadableFile,
                message: "\(path) is not text: use the PEM file (starting with -----BEGIN)"
            )
        }
        return text
    }
}
