import APNs
import APNsTransport
import HTTPRouting
import HeraldAPI
import HeraldCore
import HeraldCrypto
import HeraldFeature
import Relay
import Testing

/// The relay as a feature: off unless HERALD_RELAY=1 or the command requires it; on, the raw
/// `/push` routes and the service that drains its pushes, to the app TOPIC names.
@Suite struct RelayFeatureTests {
    static let quiet = Logger(label: "test", level: .critical)

    static func clients(_ bundleIDs: [String]) throws -> APNSClientProvider {
        let key = try APNSSigningKey(keyID: "RELAYKEY01", teamID: "RELAYTEAM1", privateKey: P256PrivateKey())
        return APNSClientProvider(
            apps: bundleIDs.map { APNSAppConfiguration(bundleID: $0, credentials: .token(key)) },
            endpoints: APNSEndpoints(),
            transports: APNSConnectionPoolFactory(logger: quiet, metrics: MetricsRegistry()),
            clock: SystemClock(),
            logger: quiet
        )
    }

    static func context(_ environment: [String: String], required: Bool = false) throws -> FeatureContext {
        var context = FeatureContext(environment: environment, logger: quiet)
        if required { context.requiredFeatures = [Relay.name] }
        context.provide(try clients(["org.example.first", "org.example.relayed"]))
        return context
    }

    @Test func offItServesNothingAndRunsNothing() throws {
        let assembly = FeatureAssembly(coreSettings: [], coreMigrations: [], features: [Relay.feature])
        let context = try Self.context(["HERALD_RELAY": "0"])
        #expect(try assembly.jobs(context: context).services.isEmpty)
        #expect(try Relay.feature.routes(context).isEmpty)
    }

    @Test func onItServesThePushRoutesRawAndRunsItsServiceForTheTopicsApp() throws {
        for (environment, required) in [(["HERALD_RELAY": "1"], false), ([:], true)] {
            var environment = environment
            environment["TOPIC"] = "org.example.relayed"
            let assembly = FeatureAssembly(coreSettings: [], coreMigrations: [], features: [Relay.feature])
            let jobs = try assembly.jobs(context: try Self.context(environment, required: required))
            let service = try #require(jobs.services.first as? RelayService)
            #expect(jobs.services.count == 1)
            #expect(service.configuration.topic == "org.example.relayed")
            #expect(jobs.announcements.map(\.value) == ["org.example.relayed"])
            var routes = service.routes
            #expect(
                routes.map(\.name).sorted()
                    == ["DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"].map {
                        "\($0) /push/{token}/{id}"
                    }
            )
            routes.removeAll { route in
                guard case .raw = route.handling else { return false }
                return route.authentication == .none
            }
            #expect(routes.isEmpty, "every relay route is raw, without a credential")
        }
    }

    @Test func itsSettingsAreCheckedAndARelayWithoutAPNsNamesWhatToSet() throws {
        var context = FeatureContext(environment: ["HERALD_RELAY": "1"], logger: Self.quiet)
        #expect(Relay.feature.checkSettings(context).first?.hasPrefix("HERALD_RELAY=1 needs APNs credentials") == true)
        context.apnsConfigured = true
        #expect(Relay.feature.checkSettings(context).isEmpty)
        // `herald relay` names the APNs variables it lacks itself.
        context.apnsConfigured = false
        context.requiredFeatures = [Relay.name]
        #expect(Relay.feature.checkSettings(context).isEmpty)
        context.environment = ["HERALD_RELAY_MAX_IN_FLIGHT": "0"]
        #expect(
            Relay.feature.checkSettings(context).contains { $0.contains("HERALD_RELAY_MAX_IN_FLIGHT=0 is not valid") }
        )
    }
}
