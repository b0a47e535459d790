public import APNs
import Foundation
public import HeraldCore
public import HeraldIO

extension APNSSimulator {
    /// Where the simulator listens, what it accepts and how it behaves.
    ///
    /// ```swift
    /// var configuration = APNSSimulator.Configuration()
    /// configuration.port = 0                               // a free port
    /// configuration.keys = [APNSSimulatorKey(keyID: "ABC123DEFG", publicKey: key.publicKey)]
    /// configuration.teamID = "DEF123GHIJ"
    /// configuration.topics = ["com.example.app"]
    /// let simulator = try APNSSimulator(configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// Address to bind; default `127.0.0.1`.
        public var host = "127.0.0.1"
        /// The HTTP/2-over-TLS port (cleartext when ``tls`` is ``TLS/disabled``); 0 picks a free
        /// one. Default 8443.
        public var port = 8443
        /// An extra cleartext (prior-knowledge `h2c`) listener, for tests and `h2load`; nil: none.
        public var cleartextPort: Int?
        /// The HTTP/1.1 control API's port; nil: none (mount ``APNSSimulator/control`` elsewhere).
        public var controlPort: Int?
        /// The server certificate.
        public var tls: TLS = .generated(certificateFile: nil)
        /// Names a generated certificate is valid for, besides ``host`` when it is specific.
        public var subjectAlternativeNames = ["localhost", "127.0.0.1", "::1"]

        /// The provider-token keys accepted. None: every provider token is `InvalidProviderToken`.
        public var keys: [APNSSimulatorKey] = []
        /// The team (`iss`) of keys that name none; nil: any team (still one per connection).
        public var teamID: String?
        /// The APNs environment the simulator plays, for keys restricted to one
        /// (``APNSSimulatorKey/environment``); nil: either, and restricted keys work everywhere.
        public var environment: APNSEnvironment?
        /// The apps served, by bundle ID; empty: any well-formed bundle ID.
        public var topics: [String] = []
        /// Apps without the Broadcast Capability (`FeatureNotEnabled`).
        public var broadcastDisabledTopics: Set<String> = []

        /// SETTINGS_MAX_CONCURRENT_STREAMS until a connection's first successful request. APNs: 1.
        public var initialMaxConcurrentStreams = 1
        /// SETTINGS_MAX_CONCURRENT_STREAMS after it. APNs has been seen sending 1000.
        public var maxConcurrentStreams = 1000
        /// After a refused device push or broadcast, lower the connection's
        /// SETTINGS_MAX_CONCURRENT_STREAMS to this until its next success, as APNs has been seen to
        /// do (APNS.md, rdar 27870881); nil (the default) keeps the limit.
        public var streamLimitAfterRejection: Int?
        /// Send GOAWAY `{"reason":"IdleTimeout"}` to a connection that has had neither a request nor
        /// a PING for this long (checked about every quarter of it, at most every second); nil (the
        /// default) never. APNs drops idle connections after a time it does not publish.
        public var idleTimeout: Duration?
        /// Deliveries kept for `GET /deliveries`; the oldest go first.
        public var deliveryCapacity = 10_000
        /// Channels per app. APNs: 10,000 per environment.
        public var channelLimit = 10_000
        /// Channels across every app, so that a client naming ever new apps cannot grow the
        /// registry without bound; past it, creating one is `CannotCreateChannelConfig`.
        public var totalChannelLimit = 100_000
        /// Device tokens `POST /tokens` may register; past it, a new one gets 409 `limit_reached`.
        public var tokenLimit = 100_000
        /// Faults `POST /faults` may hold at once; past it, a new one gets 409 `limit_reached`.
        public var faultLimit = 1_000
        /// Virtual devices (tokens holding Live Activities); past it, a push-to-start to a new
        /// token starts nothing (APNs still answers 200).
        public var virtualDeviceLimit = 100_000
        /// Live Activities per virtual device, dismissed ones included (those make room first);
        /// past it, a push-to-start starts nothing.
        public var activitiesPerDeviceLimit = 100
        /// Apply a silent push (`background`, `content-available: 1`) carrying a `live-activity`
        /// object to the activity it names, as the app's code would (docs/SIMULATOR.md, "Virtual
        /// devices"). `herald serve --simulator` turns it on.
        public var applySilentLiveActivity = false

        /// CloudKit server-to-server keys accepted; non-empty: the HTTP/2 listener also serves
        /// CloudKit's `records/modify` and `records/query` (docs/SIMULATOR.md, "CloudKit").
        public var cloudKitKeys: [APNSSimulatorCloudKitKey] = []
        /// CloudKit records held across containers; past it, creating one is 413 `QUOTA_EXCEEDED`.
        public var cloudKitRecordLimit = 100_000
        /// A CloudKit request date further than this from the clock is 401 `AUTHENTICATION_FAILED`.
        public var cloudKitClockSkew: Duration = .seconds(300)

        /// `iat` older than this is `ExpiredProviderToken`. APNs: one hour.
        public var providerTokenLifetime: Duration = .seconds(3600)
        /// A new token sooner than this after the last one, on one connection, is
        /// `TooManyProviderTokenUpdates`. APNs: 20 minutes.
        public var providerTokenUpdateInterval: Duration = .seconds(1200)
        /// How far ahead of the simulator's clock `iat` may be.
        public var providerTokenClockSkew: Duration = .seconds(60)
        /// The reason for a device push whose payload is not a JSON object. Apple documents none;
        /// the default borrows the broadcast reason for an unparseable body (UNCONFIRMED).
        public var malformedPayloadReason: APNSErrorReason = .badRequestPayload

        /// Larger bodies are answered 413 without a reason by the HTTP/2 layer. Default 1 MiB.
        public var maximumRequestBodySize = 1 << 20
        /// The time for `iat` checks, token updates, 410 timestamps and records, and the waits of
        /// latency faults; tests pass a ``HeraldCore/ManualClock`` or one that holds the waits.
        public var clock: any HeraldClock = SystemClock()
        /// The loop that runs the listeners and connections.
        public var eventLoop: EventLoop = .shared
        /// Start-up and connection problems at notice and above; refusals at debug.
        public var logger = Logger(label: "herald.simulator")

        public init() {}

        var providerTokenRules: ProviderTokenRules {
            ProviderTokenRules(
                lifetime: providerTokenLifetime.seconds,
                minimumUpdateInterval: providerTokenUpdateInterval.seconds,
                allowedClockSkew: providerTokenClockSkew.seconds
            )
        }
    }

    /// Where the server certificate comes from.
    public enum TLS: Sendable {
        /// A self-signed certificate (its own CA) made at start-up for
        /// ``Configuration/subjectAlternativeNames``; its PEM is written to `certificateFile`
        /// (default: `herald-apns-simulator-<port>.pem` in the temporary directory) for clients to
        /// trust, see ``APNSSimulator/caFile``.
        case generated(certificateFile: String?)
        /// A certificate chain and its private key, PEM.
        case provided(certificateChainPEM: String, privateKeyPEM: String)
        /// No TLS: the main port speaks cleartext prior-knowledge HTTP/2.
        case disabled
    }
}

extension Duration {
    fileprivate var seconds: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
