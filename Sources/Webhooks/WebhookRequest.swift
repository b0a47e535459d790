import Foundation
public import HeraldCore

/// A validated `POST /v1/webhooks` body: `{"url", "events": [...], "secret"?}`.
public struct WebhookRequest: Sendable, Hashable {
    public var url: String
    public var events: [WebhookEventType]
    /// `nil`: generate one.
    public var secret: String?

    static let knownFields: Set<String> = ["url", "events", "secret"]

    /// Parses and validates a request body.
    ///
    /// - Parameter allowHTTP: accept `http://` URLs as well as `https://`.
    /// - Throws: ``WebhookError`` naming the field to fix.
    public static func parse(_ body: [UInt8], allowHTTP: Bool) throws(WebhookError) -> WebhookRequest {
        guard body.count <= WebhookLimits.maximumBodyBytes else {
            throw WebhookError(
                .tooLarge,
                code: "body_too_large",
                message: "the body is \(body.count) bytes: send at most \(WebhookLimits.maximumBodyBytes)"
            )
        }
        var object = try JSONObjectReader<WebhookDomain>(
            body: body,
            maximumDepth: WebhookLimits.maximumDepth,
            what: "a webhook",
            example: "{\"url\": \"https://…\", \"events\": [\"notification.finished\"]}"
        )
        try object.rejectUnknown(knownFields)
        guard case .string(let url)? = object.value("url") else {
            throw .invalid("invalid_url", "url is required: the https:// address Herald POSTs events to", field: "url")
        }
        try validateURL(url, allowHTTP: allowHTTP)
        let events = try parseEvents(object.value("events"))
        let secret = try object.string("secret", message: "secret must be a string, or omit it to have one generated")
        if let secret { try validateSecret(secret) }
        try object.finish()
        return WebhookRequest(url: url, events: events, secret: secret)
    }

    /// An absolute `https://` URL (or `http://` when allowed) with a host, no user information,
    /// no fragment, at most ``WebhookLimits/maximumURLBytes``.
    static func validateURL(_ url: String, allowHTTP: Bool) throws(WebhookError) {
        guard !url.isEmpty, url.utf8.count <= WebhookLimits.maximumURLBytes else {
            throw .invalid(
                "invalid_url",
                "url must be 1-\(WebhookLimits.maximumURLBytes) bytes",
                field: "url"
            )
        }
        guard let target = WebhookTarget(url: url) else {
            throw .invalid(
                "invalid_url",
                "url must be an absolute URL with a host, such as https://example.com/herald-events",
                field: "url"
            )
        }
        if target.hasUserInfo {
            throw .invalid(
                "invalid_url",
                "url must not contain a user name or password: authenticate deliveries with the Herald-Signature header",
                field: "url"
            )
        }
        if target.hasFragment {
            throw .invalid("invalid_url", "url must not contain a fragment (#…)", field: "url")
        }
        switch target.scheme {
        case "https": break
        case "http" where allowHTTP: break
        case "http":
            throw .invalid(
                "invalid_url",
                "url must start with https:// (set HERALD_WEBHOOK_ALLOW_HTTP=1 to allow http:// for local use)",
                field: "url"
            )
        default:
            throw .invalid("invalid_url", "url must start with https://", field: "url")
        }
    }

    private static func parseEvents(_ value: JSONValue?) throws(WebhookError) -> [WebhookEventType] {
        guard case .array(let list)? = value, !list.isEmpty else {
            throw .invalid(
                "invalid_events",
                "events must be a non-empty array of event names: \(WebhookEventType.names)",
                field: "events"
            )
        }
        guard list.count <= WebhookEventType.allCases.count * 4 else {
            throw .invalid("invalid_events", "events lists each event name at most once", field: "events")
        }
        var events: Set<WebhookEventType> = []
        for (index, item) in list.enumerated() {
            guard case .string(let name) = item, let type = WebhookEventType(rawValue: name) else {
                let shown = item.stringValue.map { JSONText.quote(String($0.prefix(64))) } ?? "this value"
                throw .invalid(
                    "unknown_event",
                    "\(shown) is not an event Herald sends: use \(WebhookEventType.names)",
                    field: "events[\(index)]"
                )
            }
            events.insert(type)
        }
        return events.sorted { $0.rawValue < $1.rawValue }
    }

    private static func validateSecret(_ secret: String) throws(WebhookError) {
        let bytes = secret.utf8
        guard (WebhookLimits.minimumSecretBytes...WebhookLimits.maximumSecretBytes).contains(bytes.count),
            bytes.allSatisfy({ (0x21...0x7E).contains($0) })
        else {
            throw .invalid(
                "invalid_secret",
                "secret must be \(WebhookLimits.minimumSecretBytes)-\(WebhookLimits.maximumSecretBytes) "
                    + "visible ASCII characters (no spaces), or omit it to have one generated",
                field: "secret"
            )
        }
    }
}

/// The parts of a webhook's URL that validation and the destination policy look at.
struct WebhookTarget: Sendable, Hashable {
    var scheme: String
    var host: String
    var port: Int
    /// `:path`: the path and query, `/` when empty.
    var path: String
    var hasUserInfo: Bool
    var hasFragment: Bool

    /// The connection key: scheme, host and port.
    var origin: String { "\(scheme)://\(host):\(port)" }

    init?(url: String) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty
        else { return nil }
        self.scheme = scheme
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard let port = components.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : nil),
            (1...65_535).contains(port)
        else { return nil }
        self.port = port
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        self.path = path + (components.percentEncodedQuery.map { "?\($0)" } ?? "")
        hasUserInfo = components.user != nil || components.password != nil
        hasFragment = components.fragment != nil
    }
}
