import APNs
import APNsSimulator
import APNsTransport
import ClientTokens
import CloudKit
import Devices
import Foundation
import HTTPRouting
import HTTPServer
import HeraldAPI
import HeraldCore
import HeraldCrypto
import HeraldFeature
import Jobs
import LiveActivities
import Notifications
import Relay
import Storage
import Wake
import Webhooks

/// `herald serve` (the HTTP API, plus the relay with HERALD_RELAY=1) and `herald relay` (the same
/// server with the relay mounted, refusing to start without the relay's credentials).
enum ServeCommand {
    static let spec = CommandSpec(
        name: "herald serve",
        summary: "Run Herald's HTTP API. Settings come from the environment (README.md, Configuration).",
        usage: "herald serve [--host HOST] [--port PORT] [--database-url URL] [--simulator [--env-file FILE] "
            + "[--simulator-max-deliveries N] [--simulator-max-tokens N] [--simulator-max-faults N] "
            + "[--simulator-max-channels N] [--simulator-max-devices N] [--simulator-max-activities N]]",
        options: [
            .init(
                "simulator",
                help: "Send to an in-process APNs simulator with a generated key instead of Apple (docs/SIMULATOR.md)."
            ),
            .init(
                "env-file",
                value: "FILE",
                help: "With --simulator: also write the variables herald send, channels and broadcast need to FILE."
            ),
            .init("host", value: "HOST", help: "Address to listen on (HOST; default 0.0.0.0)."),
            .init("port", value: "PORT", help: "Port to listen on (PORT; default 3000)."),
            .init("database-url", value: "URL", help: "sqlite:PATH or postgres://… (DATABASE_URL)."),
        ] + APNSSimulatorCommandLine.boundOptions(prefix: "simulator-")
    )

    /// `herald relay`: the same server, its own help (the relay's variables, no simulator).
    static let relaySpec = CommandSpec(
        name: "herald relay",
        summary: "Run the Mastodon WebPush → APNs relay (and Herald's HTTP API) for one iOS app.",
        usage: """
            herald relay [--host HOST] [--port PORT] [--database-url URL]

            Required variables (the relay refuses to start without them):
              APNS_AUTH_KEY    the contents of your .p8 key (PEM, newlines kept); or APNS_AUTH_KEY_FILE, its path
              APNS_KEY_ID      the 10-character id of that key
              APPLE_TEAM_ID    your 10-character Apple team id
              TOPIC            the iOS app's bundle id, e.g. org.example.app
            Other settings (PORT, HOST, DATABASE_URL, …) as for herald serve (README.md, Configuration).
            """,
        options: [
            .init("host", value: "HOST", help: "Address to listen on (HOST; default 0.0.0.0)."),
            .init("port", value: "PORT", help: "Port to listen on (PORT; default 3000)."),
            .init("database-url", value: "URL", help: "sqlite:PATH or postgres://… (DATABASE_URL)."),
        ]
    )

    /// Whether `environment` configures an APNs app (and with it the relay).
    static func configuresAPNs(_ environment: [String: String]) -> Bool {
        let reader = EnvironmentReader(environment)
        return (APNSAppConfiguration.singleAppSettings + [.appsFile]).contains { reader.isSet($0) }
    }

    static func run(_ arguments: [String], relayRequired: Bool = false) async -> Int32 {
        let name = relayRequired ? "herald relay" : "herald serve"
        let commandSpec = relayRequired ? relaySpec : spec
        let parsed: ParsedArguments
        do {
            parsed = try commandSpec.parse(arguments)
        } catch {
            printError("\(name): \(error.message)")
            return 2
        }
        if parsed.wantsHelp {
            print(commandSpec.help + (relayRequired ? "" : SettingsReference.helpSection), terminator: "")
            return 0
        }
        if let extra = parsed.positionals.first {
            printError("\(name): unexpected argument '\(extra)'; see '\(name) --help'")
            return 2
        }
        let environment = ProcessInfo.processInfo.environment
        var problems: [String] = []
        var configuration = ServerConfiguration()
        do {
            var overrides: [String: String] = [:]
            for option in ["host", "port", "database-url"] { overrides[option] = parsed.value(option) }
            configuration = try ServerConfiguration.load(environment: environment, overrides: overrides)
        } catch {
            problems += error.problems
        }
        // Each setting group's problems are collected, so that one run names them all.
        func load<T>(_ fallback: T, _ read: () throws(ConfigurationError) -> T) -> T {
            do {
                return try read()
            } catch {
                problems += error.problems
                return fallback
            }
        }
        var webhooks = load(WebhookConfiguration()) { () throws(ConfigurationError) in
            try WebhookSettings.load(environment: environment)
        }
        webhooks.userAgent = "Herald/\(Herald.version)"
        var apiKeys = load(APIKeys([])) { () throws(ConfigurationError) in try APIKeys.load(environment: environment) }
        let metricsToken = load(nil) { () throws(ConfigurationError) in try MetricsToken.load(environment: environment)
        }
        let jobs = load(JobWorkerConfiguration()) { () throws(ConfigurationError) in
            try JobSettings.load(environment: environment)
        }
        let deviceRetention = load(DeviceRetention.defaultRetention) { () throws(ConfigurationError) in
            try DeviceSettings.load(environment: environment)
        }
        // Read again by the Wake feature; checked here with the rest.
        _ = load(WakeRunner.defaultMinimumInterval) { () throws(ConfigurationError) in
            try WakeSettings.load(environment: environment)
        }
        // Read again by the Live Activities feature; checked here with the rest.
        _ = load(TimeInterval(3_600)) { () throws(ConfigurationError) in
            try LiveActivitySettings.load(environment: environment)
        }
        _ = load(LiveActivityQuotas()) { () throws(ConfigurationError) in
            try LiveActivitySettings.quotas(environment: environment)
        }
        var cloudKit = load(CloudKitSettings()) { () throws(ConfigurationError) in
            try CloudKitSettings.load(environment: environment)
        }
        var clientTokens = load(ClientTokenConfiguration()) { () throws(ConfigurationError) in
            try ClientTokenConfiguration.load(environment: environment)
        }
        let clientDevices = load(ClientDeviceSettings()) { () throws(ConfigurationError) in
            try ClientDeviceSettings.load(environment: environment)
        }
        let clientLimits = load(ClientRateLimiter.Limits()) { () throws(ConfigurationError) in
            try ClientRateLimiter.Limits.load(environment: environment)
        }
        var relaySettings = load(RelaySettings()) { () throws(ConfigurationError) in
            try RelaySettings.load(environment: environment)
        }
        // `herald relay` serves the relay without being asked.
        if relayRequired { relaySettings.enabled = true }
        let useSimulator = parsed.flag("simulator")
        if parsed.value("env-file") != nil, !useSimulator {
            problems.append("--env-file goes with --simulator: add --simulator, or drop --env-file")
        }
        var simulatorBounds = APNSSimulator.Configuration()
        do throws(UsageError) {
            try APNSSimulatorCommandLine.applyBounds(parsed, prefix: "simulator-", to: &simulatorBounds)
        } catch {
            problems.append(error.message)
        }
        var apns: APNsSettings?
        if useSimulator {
            // The simulator stands in for Apple: no credentials are read.
        } else if relayRequired || configuresAPNs(environment) {
            do {
                apns = try APNsSettings.load(environment: environment, relayRequired: relayRequired)
            } catch {
                problems += error.problems
            }
        }
        if relaySettings.enabled, apns == nil, !useSimulator, problems.isEmpty {
            problems.append(
                "HERALD_RELAY=1 needs APNs credentials to relay with: set APNS_AUTH_KEY, APNS_KEY_ID, APPLE_TEAM_ID "
                    + "and TOPIC (or HERALD_APPS_FILE), use --simulator, or unset HERALD_RELAY"
            )
        }
        if let apps = apns?.apps {
            problems += clientTokens.unknownBoundApps(configured: apps.map(\.bundleID))
            // A token minted for one app must not act in another.
            clientTokens.requiresAppClaim = apps.count > 1
        }
        do throws(FeatureError) {
            try HeraldFeatures.assembly.validate()
        } catch {
            problems.append(error.message)
        }
        guard problems.isEmpty else {
            for problem in problems { printError("\(name): \(problem)") }
            return 2
        }

        LoggingSystem.bootstrap(
            level: configuration.logLevel,
            handler: StreamLogHandler(format: configuration.logFormat)
        )
        let logger = Logger(label: "herald")
        Allocator.registerMetrics(in: .shared)
        var simulator: DemoSimulator?
        if useSimulator {
            do {
                var demo = try DemoSimulator(
                    topic: EnvironmentReader(environment).string(.topic),
                    bounds: simulatorBounds,
                    logger: logger
                )
                if apiKeys.isEmpty {
                    // A key for this session, printed once at start-up (to the terminal, not the log).
                    let key = DemoSimulator.generateAPIKey()
                    apiKeys = APIKeys([key])
                    demo.sessionAPIKey = key
                }
                simulator = demo
                apns = demo.settings
                // CloudKit-mode wake schedules write to the simulator's CloudKit endpoints too.
                var overlay = environment
                for (setting, value) in demo.exports.values where setting.name.hasPrefix("CLOUDKIT_") {
                    overlay[setting.name] = value
                }
                cloudKit = try CloudKitSettings.load(environment: overlay)
                if let path = parsed.value("env-file") { try demo.exports.write(to: path) }
            } catch let error as SimulatorExportError {
                simulator?.removeFiles()
                printError("\(name): \(error)")
                return 2
            } catch {
                simulator?.removeFiles()
                logger.error("cannot start the APNs simulator", metadata: ["error": .string("\(error)")])
                return 1
            }
        }
        defer { simulator?.removeFiles() }
        do {
            try await serve(
                configuration,
                apns: apns,
                apiKeys: apiKeys,
                metricsToken: metricsToken,
                clientTokens: clientTokens,
                clientDevices: clientDevices,
                clientLimits: clientLimits,
                relaySettings: relaySettings,
                jobs: jobs,
                deviceRetention: deviceRetention,
                webhooks: webhooks,
                cloudKit: cloudKit,
                simulator: simulator,
                environment: environment,
                logger: logger
            )
            logger.notice("stopped")
            return 0
        } catch let error as HTTPServerError where error == .startFailed("") {
            // One line that says what to change; nothing else has started.
            let cause = error.reason.components(separatedBy: ": ").last ?? error.reason
            printError(
                "\(name): cannot listen on \(configuration.host):\(configuration.port): \(cause); "
                    + "set PORT or --port to a free port"
            )
            return 2
        } catch {
            logger.error("\(name) failed", metadata: ["error": .string(String(describing: error))])
            return 1
        }
    }

    static func serve(
        _ configuration: ServerConfiguration,
        apns: APNsSettings?,
        apiKeys: APIKeys,
        metricsToken: MetricsToken? = nil,
        clientTokens: ClientTokenConfiguration = ClientTokenConfiguration(),
        clientDevices: ClientDeviceSettings = ClientDeviceSettings(),
        clientLimits: ClientRateLimiter.Limits = ClientRateLimiter.Limits(),
        relaySettings: RelaySettings = RelaySettings(),
        jobs: JobWorkerConfiguration,
        deviceRetention: TimeInterval = DeviceRetention.defaultRetention,
        webhooks: WebhookConfiguration,
        cloudKit: CloudKitSettings = CloudKitSettings(),
        simulator: DemoSimulator? = nil,
        environment: [String: String] = [:],
        logger: Logger
    ) async throws {
        var databaseOptions = DatabaseOptions()
        databaseOptions.statementTimeout = configuration.databaseStatementTimeout
        databaseOptions.acquireTimeout = configuration.databaseAcquireTimeout
        let database = try await DatabaseFactory.open(
            url: configuration.databaseURL,
            logger: logger,
            options: databaseOptions
        )
        var pools = APNSConnectionPool.Configuration()
        // The relay answers before APNs does: under load, its pushes leave in one write every two
        // milliseconds instead of one per handful, which costs the I/O thread less per push. The
        // worker awaits its sends; they never wait.
        pools.coalescingWindow = .milliseconds(2)
        let clients = APNSClientProvider(
            apps: apns?.apps ?? [],
            endpoints: apns?.endpoints ?? APNSEndpoints(),
            transports: APNSConnectionPoolFactory(configuration: pools, logger: Logger(label: "herald.apns")),
            clock: SystemClock(),
            logger: Logger(label: "herald.apns")
        )
        do {
            let relay = try apns.flatMap { apns in
                try relaySettings.enabled ? RelayWiring(settings: apns, relay: relaySettings, clients: clients) : nil
            }
            var inputs = HeraldComposition.Inputs(
                database: database,
                clients: clients,
                apiKeys: apiKeys,
                webhooks: webhooks,
                logger: logger
            )
            inputs.clientTokens = clientTokens
            inputs.clientLimits = clientLimits
            inputs.clientDevices = clientDevices
            inputs.jobs = jobs
            inputs.deviceRetention = deviceRetention
            inputs.cloudKit = cloudKit
            inputs.environment = environment
            let composed = try await HeraldComposition.compose(inputs)
            let queue = composed.queue
            let worker = JobWorker(
                queue: queue,
                configuration: jobs,
                owner: ProcessIdentity.jobOwner(),
                logger: Logger(label: "herald.jobs")
            )

            // Every feature's routes, and beside them the server's own and the relay's.
            var router = composed.router
            var checks: [any ReadinessCheck] = [DatabaseReadiness(database: database)]
            if apns != nil { checks.append(APNsReadiness(clients: clients)) }
            var system = SystemRoutes(checks: checks)
            system.metricsToken = metricsToken
            // A scrape sees the job queue as it is, counted at most every 10 s.
            system.metricsRefreshers = [{ await worker.refreshQueueGauges(olderThan: .seconds(10)) }]
            system.register(on: &router)
            relay?.service.register(on: &router)
            if let simulator {
                simulator.simulator.control.register(on: &router, prefix: "/simulator")
                // The control API shows whole device tokens and payloads and injects faults: it
                // takes the same key as /v1, checked before any body is read.
                router.admit(under: "/simulator", apiKeys.admission)
            }

            var http = HTTPServer.Configuration()
            http.host = configuration.host
            http.port = configuration.port
            // POST /v1/notifications sets its own, larger limit (10,000 tokens).
            http.maxBodySize = configuration.maxBodySize
            http.shutdownTimeout = configuration.shutdownTimeout
            http.requestTimeout = configuration.requestTimeout
            http.maxConnectionsPerIP = configuration.maxConnectionsPerIP
            let httpLogger = Logger(label: "herald.http")
            let server = HTTPServer(
                configuration: http,
                responder: router,
                middleware: HTTPServer.defaultMiddleware(logger: httpLogger)
                    + [DatabaseUnavailableMiddleware(logger: httpLogger)],
                logger: httpLogger
            )
            // The server binds first; the rest start only once it listens, so a port in use
            // stops Herald before the worker takes a job or the simulator opens its ports.
            var services: [any Service] = [server, AfterListening(server: server, service: worker)]
            if let relay { services.append(AfterListening(server: server, service: relay.service)) }
            if let simulator { services.append(AfterListening(server: server, service: simulator.simulator)) }
            let group = ServiceGroup(
                services: services,
                gracePeriod: configuration.shutdownTimeout + .seconds(1),
                logger: logger
            )
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                tasks.addTask {
                    let port: Int
                    do {
                        port = try await server.listeningPort()
                    } catch let error as HTTPServerError where error == .notListening {
                        // The group's own error (the server's) says why.
                        return
                    }
                    var metadata: [String: LogValue] = [
                        "address": .string("http://\(configuration.host):\(port)"),
                        "database": .string(DatabaseFactory.redact(url: configuration.databaseURL)),
                        "version": .string(Herald.version),
                        "allocator": .string(Allocator.description),
                    ]
                    if let apns, relay != nil { metadata["relay_topic"] = .string(apns.relayApp.bundleID) }
                    metadata["api_keys"] = .int(apiKeys.count)
                    logger.notice("herald listening", metadata: metadata)
                    if let simulator { simulator.announce(port: port, host: configuration.host, relay: relay != nil) }
                }
                try await tasks.waitForAll()
            }
            await composed.close()
        } catch {
            await clients.shutdown()
            await database.close()
            throw error
        }
        await clients.shutdown()
        await database.close()
    }
}

/// Runs `service` once `server` listens. If the server never does, it runs nothing and waits for
/// the group's shutdown, so the server's own error is the one the group reports.
struct AfterListening: Service {
    let server: HTTPServer
    let service: any Service
    private let shutdown: AsyncStream<Void>
    private let shutdownContinuation: AsyncStream<Void>.Continuation

    init(server: HTTPServer, service: any Service) {
        self.server = server
        self.service = service
        (shutdown, shutdownContinuation) = AsyncStream.makeStream(of: Void.self)
    }

    func run() async throws {
        do {
            _ = try await server.listeningPort()
        } catch let error as HTTPServerError where error == .notListening {
            for await _ in shutdown {}
            return
        }
        try await service.run()
    }

    func triggerGracefulShutdown() {
        shutdownContinuation.finish()
        service.triggerGracefulShutdown()
    }
}

/// APNs settings for `herald serve`/`herald relay`: the apps, the endpoints, and the relay's app.
struct APNsSettings {
    var apps: [APNSAppConfiguration]
    var endpoints: APNSEndpoints
    /// The app the relay pushes to: the one named by `TOPIC`, else the first.
    var relayApp: APNSAppConfiguration

    static func load(environment: [String: String], relayRequired: Bool) throws(ConfigurationError) -> APNsSettings {
        var problems: [String] = []
        if relayRequired {
            // The relay's contract (RELAY.md, Configuration): exactly the seed service's variables.
            var reader = EnvironmentReader(environment)
            if !reader.isSet(.apnsAuthKey) && !reader.isSet(.apnsAuthKeyFile) {
                reader.report("APNS_AUTH_KEY is not set: set it to the contents of your .p8 key (PEM, newlines kept)")
            }
            _ = reader.require(.apnsKeyID, "the 10-character key id of that .p8 key")
            _ = reader.require(.appleTeamID, "your 10-character Apple team id")
            _ = reader.require(.topic, "the iOS app's bundle id, e.g. org.example.app")
            problems += reader.problems
        }
        var apps: [APNSAppConfiguration] = []
        var endpoints = APNSEndpoints()
        if problems.isEmpty {
            do {
                apps = try APNSAppConfiguration.load(environment: environment)
            } catch {
                problems += error.problems
            }
        }
        do {
            endpoints = try APNSEndpoints.load(environment: environment)
        } catch {
            problems += error.problems
        }
        if !problems.isEmpty { throw ConfigurationError(problems: problems) }
        let topic = EnvironmentReader(environment).string(.topic)
        let relayApp = apps.first { $0.bundleID == topic } ?? apps[0]
        return APNsSettings(apps: apps, endpoints: endpoints, relayApp: relayApp)
    }
}

/// The relay's APNs side: for each environment its app serves, the connections and provider token
/// of ``APNSClientProvider``'s client (the same ones notifications use, opened lazily), with a
/// send budget of its own (HERALD_RELAY_MAX_IN_FLIGHT): relayed pushes never take room from
/// `/v1`'s, and beyond their budget a relay request is answered 503 at once (RELAY.md).
struct RelayWiring {
    let service: RelayService

    init(settings: APNsSettings, relay: RelaySettings, clients: APNSClientProvider) throws {
        let app = settings.relayApp
        var limits = APNSSendBudget.Configuration()
        limits.limit = relay.maximumInFlight
        // Never waits for room: a request beyond the budget is refused at once rather than held.
        limits.waitAbove = relay.maximumInFlight + 1
        let budget = APNSSendBudget(configuration: limits)
        var routes: [APNSEnvironment: APNSClient] = [:]
        for environment in APNSEnvironment.allCases where app.serves(environment) {
            routes[environment] = try clients.client(for: app, environment: environment).sharingConnections(
                budget: budget
            )
        }
        var configuration = RelayService.Configuration(topic: app.bundleID)
        configuration.addressRateLimit = relay.addressRateLimit
        self.service = RelayService(
            configuration: configuration,
            clients: routes,
            logger: Logger(label: "herald.relay")
        )
    }
}
