import APNs
public import APNsTransport
import HeraldCore
public import HeraldFeature

/// The Mastodon WebPush → APNs relay as a feature (RELAY.md): `POST /push/{device_token}/{id}`
/// as raw routes (no API key, no request machinery: the relay's wire contract is its own), and
/// the ``RelayService`` that `herald serve` runs once it listens, draining the accepted pushes on
/// shutdown. Its settings: HERALD_RELAY, HERALD_RELAY_MAX_IN_FLIGHT, HERALD_RELAY_IP_RATE_LIMIT
/// (``RelaySettings``).
///
/// Off unless HERALD_RELAY=1 or the command requires it (`herald relay`,
/// ``HeraldFeature/FeatureContext/requiredFeatures``): then it has no routes and no service. On,
/// it pushes to the app named by `TOPIC` (else the first app) through the APNs clients `herald
/// serve` provides, with a send budget of its own (``RelayService/init(settings:clients:environment:)``).
public enum Relay {
    public static let feature = HeraldFeature(
        name: name,
        settings: [.relay, .relayMaxInFlight, .relayIPRateLimit],
        retention: ["Nothing: a relayed push is held in memory until APNs answers it, then only counted."],
        routes: { context in
            guard try isOn(context) else { return [] }
            return try context.service(RelayService.self).routes
        },
        jobs: { context in
            var jobs = FeatureJobs()
            guard try isOn(context) else { return jobs }
            let service = try RelayService(
                settings: try RelaySettings.load(environment: context.environment),
                clients: try context.service(APNSClientProvider.self),
                environment: context.environment
            )
            jobs.provide(service)
            jobs.run(service)
            jobs.announce("relay_topic", service.configuration.topic)
            return jobs
        },
        checkSettings: checkSettings
    )

    /// The feature's name: what `herald relay` requires.
    public static let name = "Relay"

    /// Whether the relay is served: HERALD_RELAY=1, or required by the command.
    static func isOn(_ context: FeatureContext) throws(ConfigurationError) -> Bool {
        if context.requires(name) { return true }
        return try RelaySettings.load(environment: context.environment).enabled
    }

    /// The settings' problems, and HERALD_RELAY=1 without APNs to relay with. `herald relay`
    /// names the APNs variables it lacks itself, each.
    static func checkSettings(_ context: FeatureContext) -> [String] {
        let settings: RelaySettings
        do {
            settings = try RelaySettings.load(environment: context.environment)
        } catch {
            return error.problems
        }
        guard settings.enabled, !context.requires(name), !context.apnsConfigured else { return [] }
        return [
            "HERALD_RELAY=1 needs APNs credentials to relay with: set APNS_AUTH_KEY, APNS_KEY_ID, APPLE_TEAM_ID "
                + "and TOPIC (or HERALD_APPS_FILE), use --simulator, or unset HERALD_RELAY"
        ]
    }
}

extension RelayService {
    /// The relay of `herald serve`: it pushes to the app named by `TOPIC` in `environment` (else
    /// the first of `clients`), for each environment that app serves through `clients`' client
    /// (the same connections and provider token notifications use, opened lazily) with a send
    /// budget of its own (HERALD_RELAY_MAX_IN_FLIGHT): relayed pushes never take room from
    /// `/v1`'s, and beyond their budget a relay request is answered 503 at once (RELAY.md).
    ///
    /// - Throws: ``HeraldFeature/FeatureError`` when `clients` has no app; a client's error.
    public convenience init(
        settings: RelaySettings,
        clients: APNSClientProvider,
        environment: [String: String]
    ) throws {
        guard let first = clients.apps.first else {
            throw FeatureError(
                "the relay needs an APNs app to push to: set APNS_AUTH_KEY, APNS_KEY_ID, "
                    + "APPLE_TEAM_ID and TOPIC (or HERALD_APPS_FILE)"
            )
        }
        let topic = EnvironmentReader(environment).string(.topic)
        let app = clients.apps.first { $0.bundleID == topic } ?? first
        var limits = APNSSendBudget.Configuration()
        limits.limit = settings.maximumInFlight
        // Never waits for room: a request beyond the budget is refused at once rather than held.
        limits.waitAbove = settings.maximumInFlight + 1
        let budget = APNSSendBudget(configuration: limits)
        var routes: [APNSEnvironment: APNSClient] = [:]
        for apnsEnvironment in APNSEnvironment.allCases where app.serves(apnsEnvironment) {
            routes[apnsEnvironment] = try clients.client(for: app, environment: apnsEnvironment)
                .sharingConnections(budget: budget)
        }
        var configuration = Configuration(topic: app.bundleID)
        configuration.addressRateLimit = settings.addressRateLimit
        self.init(configuration: configuration, clients: routes, logger: Logger(label: "herald.relay"))
    }
}
