import Foundation
import HeraldCore
import HeraldCrypto

/// Checks CloudKit's three server-to-server headers the way CloudKit does (APNS.md §10): a known
/// Key ID, an ISO 8601 date within ``maximumSkew`` of the simulator's clock, and a DER ECDSA
/// P-256 / SHA-256 signature of `<date>:<base64(SHA-256(body))>:<path>`. Written apart from the
/// CloudKit module's signer, so that a bug in one is caught by the other.
struct CloudKitAuthenticator: Sendable {
    let keys: [String: P256PublicKey]
    let maximumSkew: TimeInterval

    /// nil when the request is authenticated; else what CloudKit's 401 `reason` should say.
    func failure(headers: (String) -> String?, body: [UInt8], path: String, now: Date) -> String? {
        guard let keyID = headers("x-apple-cloudkit-request-keyid"),
            let dateText = headers("x-apple-cloudkit-request-iso8601date"),
            let signatureText = headers("x-apple-cloudkit-request-signaturev1")
        else {
            return
                "Authentication failed: the X-Apple-CloudKit-Request-KeyID, -ISO8601Date and -SignatureV1 headers are required"
        }
        guard let key = keys[keyID] else {
            return "Authentication failed: unknown key ID"
        }
        guard let date = RFC3339.date(from: dateText) else {
            return "Authentication failed: the request date is not ISO 8601"
        }
        guard abs(date.timeIntervalSince(now)) <= maximumSkew else {
            return
                "Authentication failed: the request date is more than \(Int(maximumSkew / 60)) minutes from the server's time"
        }
        guard let der = Data(base64Encoded: signatureText),
            let signature = try? ECDSASignature(derRepresentation: [UInt8](der))
        else {
            return "Authentication failed: the signature is not base64 of a DER ECDSA signature"
        }
        let subpath =
            path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? path
        let message = "\(dateText):\(Data(SHA256.hash(body)).base64EncodedString()):\(subpath)"
        guard key.isValidSignature(signature, for: Array(message.utf8)) else {
            return "Authentication failed: bad signature"
        }
        return nil
    }
}
