public import Foundation

/// How webhooks are accepted and delivered; the executable fills it from the environment.
public struct WebhookConfiguration: Sendable {
    /// Accept `http://` URLs (`HERALD_WEBHOOK_ALLOW_HTTP=1`, for local use): delivered as cleartext
    /// HTTP/1.1. Default false: `https://` only.
    public var allowHTTP = false
    /// Deliver to loopback, private, link-local and other non-public addresses
    /// (`HERALD_WEBHOOK_ALLOW_PRIVATE=1`, for local receivers and tests). Default false: such
    /// destinations are refused at creation and on the address actually connected to.
    public var allowPrivate = false
    /// `host:port:address` entries that pin where a name resolves (libcurl's `CURLOPT_RESOLVE`),
    /// for tests that must not reach any address but loopback; empty in `herald serve`.
    public var resolveOverrides: [String] = []
    /// Extra trusted root certificates (PEM) for receivers, added to the system store
    /// (`HERALD_WEBHOOK_CA_FILE`).
    public var caFile: String?
    /// Sent as `User-Agent`: `Herald/<version>`.
    public var userAgent = "Herald"
    /// Events per POST at most.
    public var batchSize = 100
    /// How long the first event of a batch waits for others before the POST.
    public var batchWindow: TimeInterval = 1
    /// How long a failing event is retried after its first attempt; then it is dead.
    public var retryWindow: TimeInterval = 24 * 3_600
    /// The first retry's delay; doubles per attempt, with jitter, up to ``retryMaximum``.
    public var retryBase: TimeInterval = 2
    public var retryMaximum: TimeInterval = 30 * 60
    /// How long dead events stay visible (counted in `GET /v1/webhooks/{id}`) before they are
    /// deleted, when later ones die.
    public var deadRetention: TimeInterval = 7 * 24 * 3_600
    /// Connect and request timeouts of a delivery.
    public var connectTimeout: Duration = .seconds(10)
    public var requestTimeout: Duration = .seconds(15)
    /// Receiver connections kept open for reuse at most (libcurl's connection cache); the
    /// oldest idle one is closed beyond it.
    public var maximumConnections = 32
    /// A connection unused this long is closed.
    public var idleConnectionTimeout: TimeInterval = 60

    public init() {}
}

/// Limits on what `POST /v1/webhooks` accepts.
public enum WebhookLimits {
    public static let maximumBodyBytes = 8 * 1_024
    public static let maximumURLBytes = 2_048
    /// A given secret: 16–256 bytes of visible ASCII (no spaces), used as the HMAC key as is.
    public static let minimumSecretBytes = 16
    public static let maximumSecretBytes = 256
    /// Generated secrets: 32 random bytes, base64url (43 characters) after `whsec_`.
    public static let generatedSecretBytes = 32
    /// Webhooks that may exist at once.
    public static let maximumWebhooks = 100
    public static let maximumDepth = 8
}
