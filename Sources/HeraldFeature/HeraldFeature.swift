public import HeraldCore
public import Storage

/// Everything `herald serve` needs from one feature (a domain module), declared in one value:
/// its settings and their check, its migrations, its routes with the authentication each needs, its
/// job kinds and their handlers, the services it runs beside the server, its webhook event types
/// and what it keeps for how long.
///
/// A feature module exposes one (`Channels.feature`); HeraldAPI's `HeraldFeatures.all` lists them,
/// and ``FeatureAssembly`` composes that list into the router, the configuration reference and
/// the schema. Adding a feature is a new module plus one line in that list (and in Package.swift).
///
/// ```swift
/// public enum Widgets {
///     public static let feature = HeraldFeature(
///         name: "Widgets",
///         settings: [.widgetLimit],
///         migrations: WidgetMigrations.all,
///         jobKinds: ["widget.polish"]
///     ) { context in
///         let store = try context.service(WidgetStore.self)
///         var group = RouteGroup("/v1/widgets", authentication: .apiKey)
///         group.get("", query: ["size"]) { request in try await store.list(request) }
///         return group.routes
///     } jobs: { context in
///         // Built first: the routes above find the store it provides.
///         let store = WidgetStore(database: try context.service((any Database).self))
///         var jobs = FeatureJobs()
///         jobs.handlers.register("widget.polish") { job in try await store.polish(job) }
///         jobs.provide(store)
///         return jobs
///     }
/// }
/// ```
public struct HeraldFeature: Sendable {
    /// The module's name (`Channels`): it names the feature in errors and in the reference.
    public var name: String
    /// The environment variables the feature reads; the configuration reference (`herald config
    /// --reference-markdown`, `--env-example`) lists them, and each is declared by exactly one
    /// feature or by the core.
    public var settings: [Setting]
    /// The tables the feature stores into: migrations of the feature's own module (`module` is
    /// ``name``), numbered by it from 1; ``FeatureAssembly`` refuses one of another module.
    public var migrations: [Migration]
    /// The routes, built once at start-up from what `herald serve` provides (``FeatureContext``).
    public var routes: @Sendable (FeatureContext) throws -> [FeatureRoute]
    /// The job kinds the feature's handlers take (`notification.send`).
    public var jobKinds: [String]
    /// The handlers of ``jobKinds``, the recurring jobs and what needs the queue, built once at
    /// start-up before the routes (``FeatureJobs``); a kind handled here must be declared in
    /// ``jobKinds``.
    public var jobs: @Sendable (FeatureContext) throws -> FeatureJobs
    /// The webhook event types the feature records (`device.invalidated`).
    public var webhookEventTypes: [String]
    /// What the feature keeps and for how long, one sentence each, naming the setting that bounds
    /// it when there is one; empty when it keeps nothing.
    public var retention: [String]
    /// The problems of the feature's settings, each a sentence saying what to write, found at
    /// start-up before anything starts: `herald serve` names every feature's with the core's and
    /// stops (exit 2), and `herald config` lists them. Given a context without services (``FeatureContext/requiredFeatures`` and
    /// ``FeatureContext/apnsConfigured`` set); empty when all is well.
    public var checkSettings: @Sendable (FeatureContext) -> [String]

    public init(
        name: String,
        settings: [Setting] = [],
        migrations: [Migration] = [],
        jobKinds: [String] = [],
        webhookEventTypes: [String] = [],
        retention: [String] = [],
        routes: @escaping @Sendable (FeatureContext) throws -> [FeatureRoute] = { _ in [] },
        jobs: @escaping @Sendable (FeatureContext) throws -> FeatureJobs = { _ in FeatureJobs() },
        checkSettings: @escaping @Sendable (FeatureContext) -> [String] = { _ in [] }
    ) {
        self.name = name
        self.settings = settings
        self.migrations = migrations
        self.jobKinds = jobKinds
        self.webhookEventTypes = webhookEventTypes
        self.retention = retention
        self.checkSettings = checkSettings
        self.jobs = jobs
        self.routes = routes
    }
}
