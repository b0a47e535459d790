import APNs
import Foundation
import HTTPRouting
import Relay

/// Target `relay-headers`: the relay's WebPush translation, whose header parsing (`Encryption`,
/// `Crypto-Key`, `TTL`, `Urgency`, `Topic`, `Content-Encoding`) is all input.
///
/// Input: a first line `<device token> <subscription id>?<query>`, header lines, an empty line,
/// the encrypted body.
public enum RelayHeadersFuzz {
    static let translation = WebPushTranslation(topic: "com.example.fuzz")
    static let now = Date(timeIntervalSince1970: 1_900_000_000)

    public static func run(_ data: [UInt8]) {
        let input = FuzzInput(data)
        let (token, target) = input.methodAndTarget
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let query = parts.count > 1 ? "?\(parts[1])" : ""
        let request = HTTPRequest(
            method: "POST",
            path: "/push/\(token)/\(parts.first ?? "")\(query)",
            headers: HTTPHeaders(input.headers.map { ($0.name, $0.value) }),
            body: input.body
        )
        if let pushed = try? translation.translate(
            rawToken: token,
            rawID: String(parts.first ?? ""),
            request: request,
            now: now
        ) {
            // What the APNs client would then send: the header block and the checks.
            _ = pushed.request.expiration.headerValue
            _ = try? pushed.request.validate()
        }
    }
}
