public import Foundation
import HeraldCore
import HeraldCrypto

/// The `Herald-Signature` header: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`,
/// keyed with the UTF-8 bytes of the webhook's secret. Receivers recompute it over the raw body
/// and reject a `t` too far from their clock (a replayed delivery).
public enum WebhookSignature {
    public static let headerName = "herald-signature"

    public static func header(secret: String, body: [UInt8], at date: Date) -> String {
        let timestamp = Int64(date.timeIntervalSince1970.rounded(.down))
        let signed = Array("\(timestamp).".utf8) + body
        let code = HMAC256.authenticationCode(for: signed, key: Array(secret.utf8))
        return "t=\(timestamp),v1=\(Hex.encode(code))"
    }
}
