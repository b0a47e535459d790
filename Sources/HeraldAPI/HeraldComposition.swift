import APNs
public import APNsTransport
public import Admin
public import ClientTokens
public import CloudKit
public import Devices
public import HTTPRouting
public import HeraldCore
import HeraldFeature
public import Jobs
import LiveActivities
import Notifications
import Polls
public import Storage
public import Webhooks

/// What `herald serve` builds from the feature list over one database and one set of APNs
/// clients: the services the features share, the one job queue with every handler, and the
/// router with every feature's routes behind the shared request machinery, and the services the
/// features run beside the server. `herald serve` adds its system routes and the simulator's
/// control API; the `http` fuzz target
/// composes the very same table, so a route a feature declares is fuzzed without more code.
///
/// ```swift
/// let composed = try await HeraldComposition.compose(HeraldComposition.Inputs(
///     database: database, clients: clients, apiKeys: keys, webhooks: WebhookConfiguration(), logger: logger
/// ))
/// var router = composed.router
/// let worker = JobWorker(queue: composed.queue, logger: logger)
/// ```
public struct HeraldComposition: Sendable {
    /// What the composition is made from; everything but the database, the clients, the keys and
    /// the webhooks' configuration has the default `herald serve` has without settings.
    public struct Inputs: Sendable {
        public var database: any Database
        public var clients: APNSClientProvider
        public var apiKeys: APIKeys
        public var clientTokens = ClientTokenConfiguration()
        public var clientLimits = ClientRateLimiter.Limits()
        public var clientDevices = ClientDeviceSettings()
        public var jobs = JobWorkerConfiguration()
        public var deviceRetention = DeviceRetention.defaultRetention
        public var webhooks: WebhookConfiguration
        /// Where webhook URLs may point; `herald serve` resolves hosts with getaddrinfo.
        public var webhookDestinations: WebhookDestinationPolicy
        public var cloudKit = CloudKitSettings()
        /// The variables the features read their own settings from.
        public var environment: [String: String] = [:]
        /// The features served whatever their settings say (`herald relay`: `Relay`).
        public var requiredFeatures: Set<String> = []
        public var clock: any HeraldClock = SystemClock()
        public var logger: Logger

        public init(
            database: any Database,
            clients: APNSClientProvider,
            apiKeys: APIKeys,
            webhooks: WebhookConfiguration,
            logger: Logger
        ) {
            self.database = database
            self.clients = clients
            self.apiKeys = apiKeys
            self.webhooks = webhooks
            self.webhookDestinations = WebhookDestinationPolicy(allowPrivate: webhooks.allowPrivate)
            self.logger = logger
        }
    }

    /// Every feature's routes (and nothing else), behind API keys and client tokens.
    public var router: Router
    /// Every feature's long-running services (the relay's), in the list's order: start them once
    /// the server listens.
    public let services: [any Service]
    /// Every feature's metadata for the `herald listening` log line (`relay_topic`), in order.
    public let announcements: [(key: String, value: String)]
    /// The one queue, with every feature's and the core's handlers; started features have
    /// scheduled their hourly jobs on it.
    public let queue: JobQueue
    /// The registry every domain shares.
    public let devices: DeviceStore
    /// Delivers webhook events (one curl-multi thread); ``close()`` stops it.
    let webhookDeliverer: WebhookDeliverer
    /// The admin console's way to `/v1`: attach the server's complete router to it (with the
    /// system routes and, under `--simulator`, `/simulator`) before serving.
    public let adminAPI: AdminAPI

    /// Stops webhook delivery: call once the job worker has stopped.
    public func close() async {
        await webhookDeliverer.close()
    }

    /// Migrates the database, builds the shared services, the queue and the routes.
    ///
    /// - Throws: a migration's error, or ``HeraldFeature/FeatureError`` when the feature list
    ///   cannot be composed (a service not provided, an authenticator missing, a route twice).
    public static func compose(_ inputs: Inputs) async throws -> HeraldComposition {
        let database = inputs.database
        try await Migrator.migrate(database, HeraldSchema.migrations, logger: inputs.logger, stamps: inputs.clock)

        // Webhooks: events are recorded in the transactions that cause them (a notification
        // finishing), delivered by webhook.deliver jobs.
        let webhookStore = WebhookStore(database: database)
        let webhookEvents = WebhookEvents(store: webhookStore, configuration: inputs.webhooks)
        let webhookDeliverer = try WebhookDeliverer(store: webhookStore, configuration: inputs.webhooks)

        // The device registry: the notification sender marks the devices of tokens APNs calls
        // dead, and each device that becomes invalid is a device.invalidated webhook event.
        // Each user has at most HERALD_CLIENT_MAX_DEVICES active devices per app and environment;
        // a token that moves to another user is a device.reassigned event.
        let devices = DeviceStore(
            database: database,
            events: webhookEvents,
            maximumDevicesPerUser: inputs.clientDevices.maximumDevicesPerUser
        )
        var handlers = JobHandlers()
        let deviceRetention = DeviceRetention(store: devices, retention: inputs.deviceRetention)
        deviceRetention.register(on: &handlers, clock: inputs.clock)
        // Idempotency keys expire after 24 h: an hourly job of their own deletes them.
        let idempotency = IdempotencyStore(database: database, clock: inputs.clock)
        idempotency.register(on: &handlers)
        webhookDeliverer.register(on: &handlers)

        // The features of HeraldFeatures.all: their handlers beside the ones above, started
        // once the queue exists; their routes are built after, from the same context.
        var features = FeatureContext(environment: inputs.environment, logger: inputs.logger, clock: inputs.clock)
        features.requiredFeatures = inputs.requiredFeatures
        features.apnsConfigured = !inputs.clients.apps.isEmpty
        // As the existential: `provide` is generic, and a bare value would open to its concrete type.
        features.provide(database as any Database)
        features.provide(inputs.jobs)
        features.provide(inputs.clients)
        features.provide(devices)
        // Live Activities read the users of a tags or everyone audience from the registry.
        features.provide(DeviceRegistryUsers(devices: devices) as any LiveActivityUserDirectory)
        // CloudKit-mode wake schedules, with the simulator's endpoints under --simulator.
        features.provide(inputs.cloudKit)
        // A notification that finishes is a notification.finished webhook event.
        features.provide(webhookEvents as any NotificationFinishObserver)
        // Live Activities that start, end or fail are live_activity.* webhook events.
        features.provide(WebhookLiveActivityEvents(webhooks: webhookEvents) as any LiveActivityEvents)
        features.provide(WebhookPollEvents(webhooks: webhookEvents) as any PollEvents)
        features.provide(DeviceService(store: devices, apps: inputs.clients.apps))
        features.provide(webhookStore)
        features.provide(webhookEvents)
        features.provide(inputs.webhooks)
        features.provide(inputs.webhookDestinations)
        // The admin console signs in with the API keys and reads /v1 in the process, through the
        // router `herald serve` attaches once it is complete (``adminAPI``).
        let adminAPI = AdminAPI()
        features.provide(AdminAPIKeys(apiKeyDigests: inputs.apiKeys.sha256Digests))
        features.provide(adminAPI)
        let featureJobs = try HeraldFeatures.assembly.jobs(context: features, core: handlers)
        let queue = JobQueue(database: database, handlers: featureJobs.handlers, clock: inputs.clock)
        try await featureJobs.start(on: queue)
        webhookEvents.attach(queue)
        try await deviceRetention.schedule(on: queue)
        try await idempotency.schedule(on: queue)

        // The features' routes, each behind the authentication it declares: /v1 takes API keys,
        // the app-facing /v1/client client tokens, and a route the backend and a user's app may
        // both call (a poll's early finalize) either.
        var router = Router()
        let clientAuthenticator = ClientTokenAuthenticator(
            inputs.clientTokens,
            clock: inputs.clock,
            limiter: ClientRateLimiter(inputs.clientLimits, clock: inputs.clock)
        )
        let registered = try HeraldFeatures.assembly.register(
            on: &router,
            context: featureJobs.routeContext(queue: queue),
            machinery: RequestMachinery(
                authenticators: [
                    .apiKey: inputs.apiKeys,
                    .clientToken: clientAuthenticator,
                    .apiKeyOrClientToken: APIKeyOrClientToken(
                        apiKeys: inputs.apiKeys,
                        clientTokens: clientAuthenticator
                    ),
                ],
                idempotency: idempotency
            )
        )
        try APIIndex(registered).register(on: &router)
        return HeraldComposition(
            router: router,
            services: featureJobs.services,
            announcements: featureJobs.announcements,
            queue: queue,
            devices: devices,
            webhookDeliverer: webhookDeliverer,
            adminAPI: adminAPI
        )
    }
}
