public import HeraldCore

/// What `herald serve` gives a feature to build its routes from: the environment its settings are
/// read from, a logger, the clock, and the shared services (the APNs clients, the database, …)
/// by type.
///
/// Services are looked up by type, so HeraldFeature depends on none of them: `herald serve`
/// provides each once (`context.provide(clients)`), a feature asks for what it uses
/// (`try context.service(APNSClientProvider.self)`), and a service nobody provided stops start-up
/// with a message naming the feature and the type.
public struct FeatureContext: Sendable {
    public var environment: [String: String]
    public var logger: Logger
    public var clock: any HeraldClock
    /// The features the command serves whatever their settings say: `herald relay` requires
    /// `Relay`, which `herald serve` serves only with HERALD_RELAY=1. A feature that can be off
    /// is on when its name is here.
    public var requiredFeatures: Set<String> = []
    /// Whether APNs is configured (credentials or HERALD_APPS_FILE, perhaps wrong: their own
    /// checks say so) or the simulator stands in for it: what a feature that cannot work without
    /// APNs checks its settings against (``HeraldFeature/checkSettings``). Its routes and jobs
    /// read the APNs clients themselves.
    public var apnsConfigured = false
    private var services: [ObjectIdentifier: any Sendable] = [:]

    public init(environment: [String: String], logger: Logger, clock: any HeraldClock = SystemClock()) {
        self.environment = environment
        self.logger = logger
        self.clock = clock
    }

    /// Whether the command requires the feature called `name` (``requiredFeatures``).
    public func requires(_ name: String) -> Bool {
        requiredFeatures.contains(name)
    }

    /// Makes `service` what ``service(_:)`` answers for its type, replacing an earlier one.
    ///
    /// Provide an existential as one (`context.provide(database as any Database)`): passed bare,
    /// Swift opens it and it is found only by its concrete type.
    public mutating func provide<Service: Sendable>(_ service: Service) {
        services[ObjectIdentifier(Service.self)] = service
    }

    /// The service of type `Service` that `herald serve` provided.
    ///
    /// - Throws: ``FeatureError`` when none was provided.
    public func service<Service: Sendable>(_ type: Service.Type = Service.self) throws(FeatureError) -> Service {
        guard let service = services[ObjectIdentifier(type)] as? Service else {
            throw FeatureError("no \(type) was provided to the features: provide it on the FeatureContext")
        }
        return service
    }
}

/// A feature list that cannot be composed: a missing service or authenticator, two features
/// declaring one route, setting, migration or job kind.
public struct FeatureError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
