import Glibc
import HeraldCore
import Webhooks

/// Target `webhook-url`: webhook URLs with addresses in them — the URL validation of
/// `POST /v1/webhooks`, the destination policy's literal check, and the address parser, whose
/// reading of an IPv4 literal must be glibc's `inet_aton`'s (the address curl will connect to).
public enum WebhookURLFuzz {
    static let policy = WebhookDestinationPolicy(metrics: MetricsRegistry())

    public static func run(_ data: [UInt8]) {
        let text = String(decoding: data.prefix(4_096), as: UTF8.self)
        // The bytes as a URL, and as the host of one.
        for url in [text, "https://\(text)/hook", "http://[\(text)]:8080/"] {
            let body = Array(#"{"url": \#(JSONText.quote(url)), "events": ["device.invalidated"]}"#.utf8)
            _ = try? WebhookRequest.parse(body, allowHTTP: true)
            do {
                if let left = try policy.checkLiteral(url: url) {
                    // What is left to resolve is a name, never an address literal.
                    precondition(WebhookAddress(literal: left.host) == nil, "literal left to DNS: \(left.host)")
                }
            } catch {
                precondition(error.code == "destination_not_allowed" && error.field == "url")
            }
        }
        checkAgainstInetAton(text)
        if let address = WebhookAddress(literal: text) {
            // Classifying never traps, and the canonical text reads back as the same address.
            _ = address.refusedRange
            precondition(WebhookAddress(literal: address.description) == address, "\(text) → \(address)")
        }
    }

    /// Hosts without white space or ':' are IPv4 literals exactly when inet_aton takes them, with
    /// the same value (inet_aton also takes trailing white space, which no URL host has).
    static func checkAgainstInetAton(_ text: String) {
        guard !text.utf8.contains(where: { $0 <= 0x20 || $0 == UInt8(ascii: ":") || $0 >= 0x7F }),
            !text.hasPrefix("[")
        else { return }
        var address = in_addr()
        let glibc = inet_aton(text, &address) == 1 ? WebhookAddress.v4(UInt32(bigEndian: address.s_addr)) : nil
        precondition(WebhookAddress(literal: text) == glibc, "\(text): inet_aton \(String(describing: glibc))")
    }
}
