public import HeraldCore
public import Jobs

/// What a feature runs on the job queue, built once at start-up (``HeraldFeature/jobs``): the
/// handlers of the job kinds it declares, its recurring jobs, what it does once the queue exists,
/// the services it built that its routes use, the long-running services it runs beside the
/// server and what it adds to the `herald listening` log line.
///
/// `herald serve` builds every feature's, makes one ``Jobs/JobQueue`` with all their handlers,
/// starts each feature on it (``whenQueued(_:)``), then builds the routes from a context that
/// provides the queue and what each feature provided here.
///
/// ```swift
/// jobs: { context in
///     let store = WidgetStore(database: try context.service((any Database).self))
///     var jobs = FeatureJobs()
///     jobs.handlers.register("widget.polish") { job in try await store.polish(job) }
///     jobs.recur(HourlyJob(kind: "widgets.prune") { now in try await store.prune(before: now) })
///     jobs.provide(store)
///     return jobs
/// }
/// ```
public struct FeatureJobs: Sendable {
    /// The handlers of the feature's job kinds; ``FeatureAssembly`` refuses a kind the feature does
    /// not declare.
    public var handlers = JobHandlers()
    /// Run once the queue exists, before any job runs, in the order added.
    private(set) var starts: [@Sendable (JobQueue) async throws -> Void] = []
    /// What the feature provides to the routes' context.
    private(set) var provisions: [@Sendable (inout FeatureContext) -> Void] = []
    /// The long-running services, in the order added (``run(_:)``).
    private(set) var services: [any Service] = []
    /// Metadata of the `herald listening` line (``announce(_:_:)``).
    private(set) var announcements: [(key: String, value: String)] = []

    public init() {}

    /// Registers `job`'s handler (reading the time from `clock`) and schedules it once the queue
    /// exists: it runs every hour, once per hour however many instances share the queue.
    public mutating func recur(_ job: HourlyJob, clock: any HeraldClock = SystemClock()) {
        job.register(on: &handlers, clock: clock)
        whenQueued { queue in try await job.schedule(on: queue) }
    }

    /// Runs `start` with the queue once it exists, before any job runs: hands it to what enqueues
    /// jobs from a handler (the queue is made after the handlers), schedules a first job.
    public mutating func whenQueued(_ start: @escaping @Sendable (JobQueue) async throws -> Void) {
        starts.append(start)
    }

    /// Runs `service` beside the server: `herald serve` starts it once the server listens (after
    /// the job worker; not at all if the server cannot listen), every feature's in the list's
    /// order, and asks it to shut down gracefully with the rest, waiting for it within the
    /// shutdown grace period.
    public mutating func run(_ service: any Service) {
        services.append(service)
    }

    /// Adds `key: value` to the `herald listening` log line (the relay's `relay_topic`): what
    /// the feature serves, read once at start-up. Never a secret.
    public mutating func announce(_ key: String, _ value: String) {
        announcements.append((key, value))
    }

    /// Makes `service` what the routes' context answers for its type (the feature's own routes,
    /// or a later feature's); an existential as one (``FeatureContext/provide(_:)``).
    public mutating func provide<Service: Sendable>(_ service: Service) {
        provisions.append { $0.provide(service) }
    }
}

/// The jobs of a feature list, composed (``FeatureAssembly/jobs(context:core:)``): one set of
/// handlers for the queue, each feature's start, and the context its routes are built from.
public struct AssembledJobs: Sendable {
    /// Every handler: the core's and each feature's. Make the queue with these.
    public let handlers: JobHandlers
    let starts: [(feature: String, start: @Sendable (JobQueue) async throws -> Void)]
    let context: FeatureContext
    /// Every feature's long-running services (``FeatureJobs/run(_:)``), in the list's order:
    /// start them once the server listens.
    public let services: [any Service]
    /// Every feature's `herald listening` metadata (``FeatureJobs/announce(_:_:)``), in order.
    public let announcements: [(key: String, value: String)]

    /// Starts each feature on `queue`, in the list's order.
    ///
    /// - Throws: the first error a feature's start throws.
    public func start(on queue: JobQueue) async throws {
        for (_, start) in starts { try await start(queue) }
    }

    /// The context to build the routes from: the one the jobs were built from, with `queue` and
    /// what each feature provided.
    public func routeContext(queue: JobQueue) -> FeatureContext {
        var context = context
        context.provide(queue)
        return context
    }
}

extension FeatureAssembly {
    /// Builds every feature's jobs from `context` and composes them with the handlers no feature
    /// owns (`core`). A feature's jobs also see what the jobs of the features listed before it
    /// provide (boards use the Live Activities' jobs and the notification sender).
    ///
    /// - Throws: ``FeatureError`` when a feature cannot build its jobs, handles a kind it does not
    ///   declare, or handles a kind another feature or the core also handles.
    public func jobs(context: FeatureContext, core: JobHandlers = JobHandlers()) throws(FeatureError) -> AssembledJobs {
        var handlers = core
        var handledBy = Dictionary(uniqueKeysWithValues: core.kinds.map { ($0, "core") })
        var starts: [(feature: String, start: @Sendable (JobQueue) async throws -> Void)] = []
        var routeContext = context
        var services: [any Service] = []
        var announcements: [(key: String, value: String)] = []
        for feature in features {
            let jobs: FeatureJobs
            do {
                jobs = try feature.jobs(routeContext)
            } catch {
                throw FeatureError("\(feature.name) cannot build its jobs: \(error)")
            }
            for kind in jobs.handlers.kinds {
                guard feature.jobKinds.contains(kind) else {
                    throw FeatureError(
                        "\(feature.name) handles the job kind \(kind) without declaring it: add it to its jobKinds"
                    )
                }
                if let other = handledBy[kind] {
                    throw FeatureError("the job kind \(kind) is handled by both \(other) and \(feature.name)")
                }
                handledBy[kind] = feature.name
            }
            handlers.merge(jobs.handlers)
            starts += jobs.starts.map { (feature.name, $0) }
            for provide in jobs.provisions { provide(&routeContext) }
            services += jobs.services
            announcements += jobs.announcements
        }
        return AssembledJobs(
            handlers: handlers,
            starts: starts,
            context: routeContext,
            services: services,
            announcements: announcements
        )
    }
}
