public import Foundation
import HeraldCore
public import HeraldCrypto

/// Signs CloudKit Web Services requests with a server-to-server key (APNS.md §10).
///
/// The three headers are `X-Apple-CloudKit-Request-KeyID`, `X-Apple-CloudKit-Request-ISO8601Date`
/// (UTC, whole seconds, `Z`) and `X-Apple-CloudKit-Request-SignatureV1`: the base64 of the DER
/// ECDSA P-256 / SHA-256 signature of `<date>:<base64(SHA-256(body))>:<subpath>`, where the subpath
/// is the URL path from `/database/1/…` on. The date is passed in, so signing is a pure function
/// of its inputs (up to ECDSA's randomness).
///
/// ```swift
/// let signer = try CloudKitSigner(keyID: keyID, pemRepresentation: pemText)
/// let headers = try signer.sign(body: body, subpath: "/database/1/iCloud.com.example/production/public/records/query", date: Date())
/// ```
public struct CloudKitSigner: Sendable, CustomStringConvertible {
    public static let keyIDHeader = "X-Apple-CloudKit-Request-KeyID"
    public static let dateHeader = "X-Apple-CloudKit-Request-ISO8601Date"
    public static let signatureHeader = "X-Apple-CloudKit-Request-SignatureV1"

    /// The Key ID CloudKit Dashboard shows for the key.
    public let keyID: String
    private let privateKey: P256PrivateKey

    /// The public half, as pasted into CloudKit Dashboard.
    public var publicKey: P256PublicKey { privateKey.publicKey }

    public init(keyID: String, privateKey: P256PrivateKey) {
        self.keyID = keyID
        self.privateKey = privateKey
    }

    /// Reads the private key from PEM: SEC1 `EC PRIVATE KEY` (what `openssl ecparam -name
    /// prime256v1 -genkey -noout` writes) or PKCS#8 `PRIVATE KEY`.
    ///
    /// - Throws: ``CloudKitError`` with code ``CloudKitError/Code/invalidConfiguration``.
    public init(keyID: String, pemRepresentation: String) throws(CloudKitError) {
        guard Self.isWellFormedKeyID(keyID) else {
            throw CloudKitError(
                .invalidConfiguration,
                reason: "the CloudKit Key ID '\(keyID.prefix(80))' is not one: copy it from CloudKit Dashboard → "
                    + "API Access → Server-to-Server Keys (letters and digits)"
            )
        }
        do {
            self.init(keyID: keyID, privateKey: try P256PrivateKey(pemRepresentation: pemRepresentation))
        } catch {
            throw CloudKitError(
                .invalidConfiguration,
                reason: "the CloudKit private key is not a P-256 private key in PEM form (\(error)): use the file "
                    + "`openssl ecparam -name prime256v1 -genkey -noout -out eckey.pem` wrote"
            )
        }
    }

    /// The three signed header values for one request.
    public struct Headers: Sendable, Hashable {
        public var keyID: String
        public var date: String
        public var signature: String

        /// As (name, value) pairs, in the order CloudKit documents them.
        public var fields: [(name: String, value: String)] {
            [
                (CloudKitSigner.keyIDHeader, keyID), (CloudKitSigner.dateHeader, date),
                (CloudKitSigner.signatureHeader, signature),
            ]
        }
    }

    /// Signs a request with `body` (the exact bytes sent; empty for a GET) to `subpath` at `date`.
    /// A query string in `subpath` is not part of what is signed.
    ///
    /// - Throws: ``CloudKitError`` with code ``CloudKitError/Code/signingFailed`` when OpenSSL fails.
    public func sign(body: [UInt8], subpath: String, date: Date) throws(CloudKitError) -> Headers {
        let dateText = Self.dateString(date)
        let message = Self.message(date: dateText, body: body, subpath: subpath)
        do {
            let signature = try privateKey.signature(for: Array(message.utf8))
            return Headers(
                keyID: keyID,
                date: dateText,
                signature: Data(signature.derRepresentation).base64EncodedString()
            )
        } catch {
            throw CloudKitError(.signingFailed, reason: "OpenSSL could not sign the CloudKit request: \(error)")
        }
    }

    /// `2016-01-25T22:15:43Z`: UTC, whole seconds (the fraction is dropped, not rounded).
    public static func dateString(_ date: Date) -> String {
        RFC3339.string(from: Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)))
    }

    /// The signed message: `<date>:<base64(SHA-256(body))>:<subpath without query>`.
    public static func message(date: String, body: [UInt8], subpath: String) -> String {
        let path = subpath.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
        let bodyHash = Data(SHA256.hash(body)).base64EncodedString()
        return "\(date):\(bodyHash):\(path ?? subpath)"
    }

    /// Key IDs are hex-like strings in Dashboard; accept 1 to 128 letters, digits, `-` and `_`.
    static func isWellFormedKeyID(_ keyID: String) -> Bool {
        (1...128).contains(keyID.utf8.count)
            && keyID.utf8.allSatisfy { byte in
                (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || byte == 45
                    || byte == 95
            }
    }

    public var description: String { "CloudKitSigner(keyID: \(keyID))" }
}
