import DatabaseTestSupport
import HTTPRouting
import HeraldAPI
import HeraldCore
import HeraldFeature
import Jobs
import Storage
import Synchronization
import Testing

/// The feature list `herald serve` composes, and the assembly's shared machinery on a router in
/// memory: each route's declared authentication, its query check and the refusal mapping.
@Suite struct FeatureAssemblyTests {
    enum WidgetDomain: RefusalDomain {}
    typealias WidgetError = Refusal<WidgetDomain>

    static let key = "feature-test-key-0123456789"

    /// Every setting in HeraldCore's catalog is declared by exactly one feature or by the core, and
    /// nothing else is declared: the reference is generated from the declarations.
    @Test func everySettingIsDeclaredByExactlyOneFeatureOrTheCore() {
        var owners: [String: [String]] = [:]
        for (setting, owner) in HeraldFeatures.assembly.settingOwners {
            owners[setting.name, default: []].append(owner)
        }
        for setting in Setting.all {
            #expect(owners[setting.name]?.count == 1, "\(setting.name) is declared by \(owners[setting.name] ?? [])")
        }
        #expect(Set(owners.keys) == Set(Setting.all.map(\.name)))
        #expect(HeraldFeatures.settings.count == Setting.all.count)
    }

    @Test func theFeatureListComposes() throws {
        try HeraldFeatures.assembly.validate()
        #expect(HeraldSchema.migrations.count == Set(HeraldSchema.migrations.map(\.id)).count)
    }

    @Test func twoFeaturesDeclaringOneSettingOrVersionAreRefused() {
        let migration = Migration(module: "Widgets", number: 1, name: "widgets", sql: "CREATE TABLE widgets (id TEXT)")
        let first = HeraldFeature(name: "Widgets", settings: [.port], migrations: [migration])
        let second = HeraldFeature(name: "Gadgets", migrations: [migration])
        let assembly = FeatureAssembly(coreSettings: [.port], coreMigrations: [], features: [first, second])
        #expect(throws: FeatureError.self) { try assembly.validate() }
        do {
            try assembly.validate()
        } catch {
            #expect(error.message.contains("the setting PORT is declared by both core and Widgets"))
            #expect(error.message.contains("the migration Widgets 1 is declared by both Widgets and Gadgets"))
            #expect(error.message.contains("the feature Gadgets declares migration Widgets 1"))
        }
    }

    static func router(_ features: [HeraldFeature]) throws -> Router {
        let assembly = FeatureAssembly(coreSettings: [], coreMigrations: [], features: features)
        var router = Router()
        try assembly.register(
            on: &router,
            context: FeatureContext(environment: [:], logger: Logger(label: "test", level: .error)),
            machinery: RequestMachinery(authenticators: [.apiKey: APIKeys([key])])
        )
        return router
    }

    /// The response, as the server makes one of an ``HTTPError`` the router throws.
    static func respond(_ router: Router, _ request: HTTPRequest) async throws -> HTTPResponse {
        do {
            return try await router.respond(to: request)
        } catch let error as HTTPError {
            return error.response
        }
    }

    static let widgets = HeraldFeature(name: "Widgets") { _ in
        var group = RouteGroup("/v1/widgets", authentication: .apiKey)
        group.get("", query: ["size"]) { _ in .json(["widgets": [String]()]) }
        group.get("/{id}") { request in
            throw WidgetError(.notFound, code: "unknown_widget", message: "no widget \(request.parameters["id"] ?? "")")
        }
        var open = RouteGroup("/widgets", authentication: .none)
        open.get("/count") { _ in .json(["count": 0]) }
        return group.routes + open.routes
    }

    @Test func routesGetTheAuthenticationTheyDeclare() async throws {
        let router = try Self.router([Self.widgets])
        let bearer: HTTPHeaders = ["Authorization": "Bearer \(Self.key)"]
        #expect(try await Self.respond(router, HTTPRequest(path: "/v1/widgets")).status == 401)
        #expect(try await Self.respond(router, HTTPRequest(path: "/v1/widgets/7")).status == 401)
        #expect(try await Self.respond(router, HTTPRequest(path: "/v1/widgets", headers: bearer)).status == 200)
        #expect(try await Self.respond(router, HTTPRequest(path: "/widgets/count")).status == 200)
    }

    @Test func aRefusalIsAnsweredWithItsStatusAndAnUnknownParameterIsRefused() async throws {
        let router = try Self.router([Self.widgets])
        let bearer: HTTPHeaders = ["Authorization": "Bearer \(Self.key)"]
        let refused = try await Self.respond(router, HTTPRequest(path: "/v1/widgets/7", headers: bearer))
        #expect(refused.status == 404)
        #expect(String(decoding: refused.body, as: UTF8.self).contains(#""code":"unknown_widget""#))
        let unknown = try await Self.respond(router, HTTPRequest(path: "/v1/widgets?colour=red", headers: bearer))
        #expect(unknown.status == 400)
        #expect(String(decoding: unknown.body, as: UTF8.self).contains(#""code":"unknown_parameter""#))
    }

    @Test func aRouteWithoutItsAuthenticatorOrDeclaredTwiceStopsStartUp() {
        let tokens = HeraldFeature(name: "Tokens") { _ in
            [FeatureRoute("GET", "/v1/client/x", authentication: .clientToken) { _ in HTTPResponse(status: 204) }]
        }
        #expect(throws: FeatureError.self) { try Self.router([tokens]) }
        let again = HeraldFeature(name: "Again") { _ in
            [FeatureRoute("GET", "/widgets/count", authentication: .none) { _ in HTTPResponse(status: 204) }]
        }
        #expect(throws: FeatureError.self) { try Self.router([Self.widgets, again]) }
    }

    /// A raw route is added as it is: its handler answers before `respond` returns (no task),
    /// with no query or media-type check in between; its own admission covers every method at its
    /// pattern, once per request.
    @Test func aRawRouteAnswersAsItIsBehindOnlyItsOwnAdmission() async throws {
        let checks = Badges.Counted()
        let raw = HeraldFeature(name: "Raw") { _ in
            [
                .raw(
                    "POST",
                    "/raw/{id}",
                    maxBodySize: 16,
                    admission: { request in
                        checks.count.withLock { $0 += 1 }
                        return request.headers["Block"] == nil ? nil : HTTPResponse(status: 429)
                    },
                    answering: { request, answer in answer(HTTPResponse(status: 202, body: request.body)) }
                ),
                .raw("GET", "/raw/{id}") { _, answer in answer(HTTPResponse(status: 404)) },
            ]
        }
        let router = try Self.router([raw])
        let answered = Mutex<HTTPResponse?>(nil)
        let sink = HTTPResponseSink(spawn: { _ in Issue.record("a raw route took a task") }) { result in
            if case .success(let response) = result { answered.withLock { $0 = response } }
        }
        let request = HTTPRequest(
            method: "POST",
            path: "/raw/7?anything=1",
            headers: ["Content-Type": "text/plain"],
            body: Array("hi".utf8)
        )
        router.respond(to: request, answer: sink)
        let response = try #require(answered.withLock { $0 })
        #expect(response.status == 202)
        #expect(response.body == Array("hi".utf8))
        #expect(router.maximumBodySize(method: "POST", rawPath: "/raw/7") == 16)
        guard
            case .answer(let refused) = router.admit(
                HTTPRequest(method: "GET", path: "/raw/7", headers: ["Block": "1"])
            )
        else {
            Issue.record("the GET at the raw route's pattern was not checked")
            return
        }
        #expect(refused.status == 429)
        let before = checks.count.withLock { $0 }
        #expect(try await Self.respond(router, HTTPRequest(method: "POST", path: "/raw/8")).status == 202)
        #expect(checks.count.withLock { $0 } == before + 1)
    }

    /// A feature's long-running services and its `herald listening` metadata come out of its jobs
    /// in the list's order; its settings are checked with the command's required features.
    @Test func aFeaturesServicesAnnouncementsAndSettingsChecksAreComposed() throws {
        final class Idle: Service {
            func run() async throws {}
            func triggerGracefulShutdown() {}
        }
        let lamp = HeraldFeature(name: "Lamp") { _ in
            []
        } jobs: { _ in
            var jobs = FeatureJobs()
            jobs.run(Idle())
            jobs.announce("lamp", "on")
            return jobs
        } checkSettings: { context in
            context.requires("Lamp") || context.environment["LAMP"] == "1" ? [] : ["LAMP is not set: set it to 1"]
        }
        let assembly = FeatureAssembly(coreSettings: [], coreMigrations: [], features: [Self.polishing, lamp])
        var context = FeatureContext(environment: [:], logger: Logger(label: "test", level: .error))
        let jobs = try assembly.jobs(context: context)
        #expect(jobs.services.count == 1 && jobs.services.first is Idle)
        #expect(jobs.announcements.map { "\($0.key)=\($0.value)" } == ["lamp=on"])
        #expect(assembly.settingsProblems(context: context) == ["LAMP is not set: set it to 1"])
        context.requiredFeatures = ["Lamp"]
        #expect(assembly.settingsProblems(context: context).isEmpty)
    }

    /// A credential that names its bearer, and counts how often it is checked on the headers.
    struct Badges: RequestAuthenticator {
        let admissions = Counted()

        final class Counted: Sendable {
            let count = Mutex(0)
        }

        var admission: Router.AdmissionCheck {
            { request in
                admissions.count.withLock { $0 += 1 }
                guard let badge = request.headers["Badge"] else { return HTTPResponse(status: 401) }
                request.principal = badge
                return nil
            }
        }
    }

    /// A client-token route's handler reads who the credential named; its check runs once per
    /// request on the headers, however many of the feature's routes lie under one another.
    @Test func aRouteReadsItsPrincipalAndItsAdmissionRunsOnce() async throws {
        let badges = HeraldFeature(name: "Badges") { _ in
            var group = RouteGroup("/v1/client/badges", authentication: .clientToken)
            group.get("/{id}") { request in .json(["holder": request.principal as? String ?? "nobody"]) }
            group.get("") { _ in HTTPResponse(status: 204) }
            group.get("/{id}/history") { _ in HTTPResponse(status: 204) }
            return group.routes
        }
        let authenticator = Badges()
        var router = Router()
        try FeatureAssembly(coreSettings: [], coreMigrations: [], features: [badges]).register(
            on: &router,
            context: FeatureContext(environment: [:], logger: Logger(label: "test", level: .error)),
            machinery: RequestMachinery(authenticators: [.clientToken: authenticator])
        )
        for path in ["/v1/client/badges", "/v1/client/badges/7", "/v1/client/badges/7/history"] {
            let before = authenticator.admissions.count.withLock { $0 }
            guard case .readBody = router.admit(HTTPRequest(path: path, headers: ["Badge": "ann"])) else {
                Issue.record("\(path) was refused")
                continue
            }
            #expect(authenticator.admissions.count.withLock { $0 } == before + 1, "\(path)")
        }
        let read = try await Self.respond(router, HTTPRequest(path: "/v1/client/badges/7", headers: ["Badge": "ann"]))
        #expect(String(decoding: read.body, as: UTF8.self) == #"{"holder":"ann"}"#)
        #expect(try await Self.respond(router, HTTPRequest(path: "/v1/client/badges/7")).status == 401)
    }

    /// A route under another's pattern may take another credential: each route runs its own
    /// check and no other, once per request.
    @Test func aRouteUnderAnotherCredentialsPatternTakesItsOwn() async throws {
        let mixed = HeraldFeature(name: "Mixed") { _ in
            [
                FeatureRoute("GET", "/v1/mixed", authentication: .apiKey) { _ in HTTPResponse(status: 204) },
                FeatureRoute("GET", "/v1/mixed/{id}", authentication: .clientToken) { request in
                    .json(["holder": request.principal as? String ?? "nobody"])
                },
            ]
        }
        let badges = Badges()
        var router = Router()
        try FeatureAssembly(coreSettings: [], coreMigrations: [], features: [mixed]).register(
            on: &router,
            context: FeatureContext(environment: [:], logger: Logger(label: "test", level: .error)),
            machinery: RequestMachinery(authenticators: [.apiKey: APIKeys([Self.key]), .clientToken: badges])
        )
        let bearer: HTTPHeaders = ["Authorization": "Bearer \(Self.key)"]
        #expect(try await Self.respond(router, HTTPRequest(path: "/v1/mixed", headers: bearer)).status == 204)
        #expect(try await Self.respond(router, HTTPRequest(path: "/v1/mixed", headers: ["Badge": "ann"])).status == 401)
        #expect(badges.admissions.count.withLock { $0 } == 0, "the key's route never asks for a badge")
        #expect(try await Self.respond(router, HTTPRequest(path: "/v1/mixed/7", headers: bearer)).status == 401)
        let read = try await Self.respond(router, HTTPRequest(path: "/v1/mixed/7", headers: ["Badge": "ann"]))
        #expect(String(decoding: read.body, as: UTF8.self) == #"{"holder":"ann"}"#)
        #expect(badges.admissions.count.withLock { $0 } == 2, "once per request to the badge's route")
    }

    /// A counter the widget jobs' feature builds with its jobs and its routes read.
    final class Polished: Sendable {
        let count = Mutex(0)
        let queues = Mutex(0)
    }

    static let polishing = HeraldFeature(
        name: "Polishing",
        jobKinds: ["widget.polish", "widgets.prune"]
    ) { context in
        let polished = try context.service(Polished.self)
        let queue = try context.service(JobQueue.self)
        var group = RouteGroup("/v1/polish", authentication: .none)
        group.post("") { _ in
            try await queue.enqueue(NewJob(kind: "widget.polish"))
            return HTTPResponse(status: 202)
        }
        group.get("") { _ in
            .json(["polished": polished.count.withLock { $0 }, "queues": polished.queues.withLock { $0 }])
        }
        return group.routes
    } jobs: { _ in
        let polished = Polished()
        var jobs = FeatureJobs()
        jobs.handlers.register("widget.polish") { _ in
            polished.count.withLock { $0 += 1 }
            return .done
        }
        jobs.recur(HourlyJob(kind: "widgets.prune") { _ in })
        jobs.whenQueued { _ in polished.queues.withLock { $0 += 1 } }
        jobs.provide(polished)
        return jobs
    }

    /// The handlers a feature declares run on the one queue; its start runs once the queue exists;
    /// its routes get the queue and what its jobs provided.
    @Test func aFeaturesJobsRunOnTheQueueAndItsRoutesShareWhatTheyBuilt() async throws {
        try await withDatabase(.sqliteMemory) { db, _ in
            try await Migrator.migrate(db, HeraldSchema.migrations, logger: TestDatabase.quiet)
            let assembly = FeatureAssembly(coreSettings: [], coreMigrations: [], features: [Self.polishing])
            var core = JobHandlers()
            core.register("core.chore") { _ in .done }
            let context = FeatureContext(environment: [:], logger: Logger(label: "test", level: .error))
            let jobs = try assembly.jobs(context: context, core: core)
            #expect(jobs.handlers.kinds == ["core.chore", "widget.polish", "widgets.prune"])
            let queue = JobQueue(database: db, handlers: jobs.handlers)
            try await jobs.start(on: queue)
            // The recurring job is scheduled once, however often the feature starts.
            try await jobs.start(on: queue)
            #expect(try await queue.list(kind: "widgets.prune").count == 1)

            var router = Router()
            try assembly.register(on: &router, context: jobs.routeContext(queue: queue), machinery: RequestMachinery())
            #expect(try await router.respond(to: HTTPRequest(method: "POST", path: "/v1/polish")).status == 202)
            let worker = JobWorker(queue: queue, logger: TestDatabase.quiet)
            #expect(try await worker.runDueJobs() >= 1)
            let read = try await router.respond(to: HTTPRequest(path: "/v1/polish"))
            #expect(String(decoding: read.body, as: UTF8.self) == #"{"polished":1,"queues":2}"#)
        }
    }

    /// A job kind handled by a feature that does not declare it, or by two handlers, stops start-up.
    @Test func aJobKindHandledButUndeclaredOrHandledTwiceIsRefused() throws {
        let context = FeatureContext(environment: [:], logger: Logger(label: "test", level: .error))
        let undeclared = HeraldFeature(name: "Sloppy") { _ in
            []
        } jobs: { _ in
            var jobs = FeatureJobs()
            jobs.handlers.register("widget.polish") { _ in .done }
            return jobs
        }
        #expect(throws: FeatureError.self) {
            try FeatureAssembly(coreSettings: [], coreMigrations: [], features: [undeclared]).jobs(context: context)
        }
        do {
            _ = try FeatureAssembly(coreSettings: [], coreMigrations: [], features: [undeclared]).jobs(context: context)
        } catch {
            #expect(error.message.contains("Sloppy handles the job kind widget.polish without declaring it"))
        }
        var core = JobHandlers()
        core.register("widget.polish") { _ in .done }
        let assembly = FeatureAssembly(coreSettings: [], coreMigrations: [], features: [Self.polishing])
        #expect(throws: FeatureError("the job kind widget.polish is handled by both core and Polishing")) {
            try assembly.jobs(context: context, core: core)
        }
        let twice = FeatureAssembly(coreSettings: [], coreMigrations: [], features: [Self.polishing, Self.polishing])
        #expect(throws: FeatureError.self) { try twice.validate() }
    }

    @Test func aRefusalSaysWhenToRetry() {
        let refusal = WidgetError(.unavailable, code: "down", message: "later", retryAfter: 5)
        #expect(refusal.response.status == 503)
        #expect(refusal.response.headers["Retry-After"] == "5")
        #expect(WidgetError(.upstreamRejected, code: "apns_rejected", message: "no").httpStatus == 502)
    }
}
