import HeraldCore
public import HeraldFeature
import Jobs
import Storage

/// The admin console as a feature: `/admin`, server-rendered pages over what `/v1` shows
/// (``AdminConsole``), signed in with an API key, a session per browser in `admin_sessions`
/// (``AdminMigrations``), deleted hourly once expired. Off with `HERALD_ADMIN=0`.
///
/// `herald serve` provides the API keys' digests (``AdminAPIKeys``) and the in-process client of
/// its router (``AdminAPI``), which it attaches once the router is complete.
public enum Admin {
    public static let feature = HeraldFeature(
        name: "Admin",
        settings: [.admin, .adminInsecureCookie, .adminSessionTTL, .adminReadOnlyKeys],
        migrations: AdminMigrations.all,
        jobKinds: [pruneJobKind],
        retention: [
            "A console session: until it expires (HERALD_ADMIN_SESSION_TTL after sign-in) or its browser signs out; "
                + "expired ones are deleted hourly."
        ],
        routes: { context in
            let settings = try AdminSettings.load(environment: context.environment)
            guard settings.enabled else { return [] }
            let keys = try context.service(AdminAPIKeys.self)
            let console = AdminConsole(
                settings: settings,
                keyring: AdminKeyring(operators: keys.apiKeyDigests, readers: settings.readOnlyKeyDigests),
                database: try context.service((any Database).self),
                api: try context.service(AdminAPI.self),
                queue: try context.service(JobQueue.self),
                trends: try context.service(AdminTrends.self),
                clock: context.clock,
                logger: context.logger
            )
            return console.routes
        },
        jobs: { context in
            var jobs = FeatureJobs()
            let sessions = AdminSessionStore(database: try context.service((any Database).self))
            jobs.recur(
                HourlyJob(kind: pruneJobKind) { now in _ = try await sessions.deleteExpired(now: now) },
                clock: context.clock
            )
            guard try AdminSettings.load(environment: context.environment).enabled else { return jobs }
            // The overview's per-minute counts, sampled beside the server.
            let trends = AdminTrends(clock: context.clock)
            jobs.run(trends)
            jobs.provide(trends)
            return jobs
        },
        checkSettings: { context in
            do {
                _ = try AdminSettings.load(environment: context.environment)
                return []
            } catch let error as ConfigurationError {
                return error.problems
            } catch {
                return ["\(error)"]
            }
        }
    )

    static let pruneJobKind = "admin.sessions.prune"
}
