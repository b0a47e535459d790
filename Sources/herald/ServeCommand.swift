import APNs
import APNsSimulator
import APNsTransport
import Admin
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
import Notifications
import Relay
import Storage
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
        let useSimulator = parsed.flag("simulator")
        // `herald relay` serves the relay feature whatever HERALD_RELAY says.
        let requiredFeatures: Set<String> = relayRequired ? [Relay.name] : []
        var featureCheck = FeatureContext(environment: environment, logger: Logger(label: "herald"))
        featureCheck.requiredFeatures = requiredFeatures
        featureCheck.apnsConfigured = useSimulator || relayRequired || configuresAPNs(environment)
        problems += HeraldFeatures.assembly.settingsProblems(context: featureCheck)
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
                requiredFeatures: requiredFeatures,
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
        requiredFeatures: Set<String> = [],
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
        // Under load, queued pushes leave together once per window (docs/PERFORMANCE.md,
        // "Coalescing window"); a push after a quiet window leaves at once.
        pools.coalescingWindow = .milliseconds(2)
        let clients = APNSClientProvider(
            apps: apns?.apps ?? [],
            endpoints: apns?.endpoints ?? APNSEndpoints(),
            transports: APNSConnectionPoolFactory(configuration: pools, logger: Logger(label: "herald.apns")),
            clock: SystemClock(),
            logger: Logger(label: "herald.apns")
        )
        do {
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
            inputs.requiredFeatures = requiredFeatures
            let composed = try await HeraldComposition.compose(inputs)
            let queue = composed.queue
            let worker = JobWorker(
                queue: queue,
                configuration: jobs,
                owner: ProcessIdentity.jobOwner(),
                logger: Logger(label: "herald.jobs")
            )

            // Every feature's routes, and beside them the server's own.
            var router = composed.router
            var checks: [any ReadinessCheck] = [DatabaseReadiness(database: database)]
            if apns != nil { checks.append(APNsReadiness(clients: clients)) }
            var system = SystemRoutes(checks: checks)
            system.metricsToken = metricsToken
            // A scrape sees the job queue as it is, counted at most every 10 s.
            system.metricsRefreshers = [{ await worker.refreshQueueGauges(olderThan: .seconds(10)) }]
            system.register(on: &router)
            if let simulator {
                simulator.simulator.control.register(on: &router, prefix: "/simulator")
                // The control API shows whole device tokens and payloads and injects faults: it
                // takes the same key as /v1, checked before any body is read.
                router.admit(under: "/simulator", apiKeys.admission)
            }
            // The admin console reads through the complete router, as a client of /v1 would.
            composed.adminAPI.attach(router)

            var http = HTTPServer.Configuration()
            http.host = configuration.host
            http.port = configuration.port
            // POST /v1/notifications sets its own, larger limit (10,000 tokens).
            http.maxBodySize = configuration.maxBodySize
            http.maxBodySizeSetting = Setting.maxBodyBytes.name
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
            // stops Herald before the worker takes a job, a feature's service (the relay's) starts
            // or the simulator opens its ports.
            var services: [any Service] = [server, AfterListening(server: server, service: worker)]
            services += composed.services.map { AfterListening(server: server, service: $0) }
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
                    for (key, value) in composed.announcements { metadata[key] = .string(value) }
                    metadata["api_keys"] = .int(apiKeys.count)
                    logger.notice("herald listening", metadata: metadata)
                    if let simulator {
                        let relay = composed.announcements.contains { $0.key == "relay_topic" }
                        simulator.announce(port: port, host: configuration.host, relay: relay)
                    }
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

/// APNs settings for `herald serve`/`herald relay`: the apps and the endpoints.
struct APNsSettings {
    var apps: [APNSAppConfiguration]
    var endpoints: APNSEndpoints

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
        return APNsSettings(apps: apps, endpoints: endpoints)
    }
}
