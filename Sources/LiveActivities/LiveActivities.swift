import APNsTransport
import HeraldCore
public import HeraldFeature
import Jobs
import Storage

/// Live Activities as a feature: `/v1/live-activities` and `/v1/users/{user_id}/push-to-start-tokens`
/// behind an API key (``LiveActivityRoutes``), `/v1/client/push-to-start-tokens` and
/// `/v1/client/live-activities/{id}/instances` behind a client token (``ClientLiveActivityRoutes``),
/// `HERALD_CHANNEL_RETENTION`, `HERALD_LIVE_ACTIVITY_RETENTION_DAYS` and
/// `HERALD_MAX_INSTANCES_PER_USER` (``LiveActivitySettings``), the Live Activity tables, the jobs
/// that start, send, end, expire and delete channels (``LiveActivityJobKind``), and the hourly
/// pruning of finished activities (``LiveActivityRetention``).
///
/// Its jobs are built from what `herald serve` provides: the database, a ``LiveActivityUserDirectory``
/// (the users an audience of tags or everyone names) and the ``APNSClientProvider`` (pushes, and the management
/// clients channels are created and deleted through). The jobs provide the ``LiveActivityJobs``
/// whose acceptor the routes accept updates with; it gets the queue once it exists.
public enum LiveActivities {
    public static let feature = HeraldFeature(
        name: "LiveActivities",
        settings: [.channelRetention, .liveActivityRetentionDays, .maxInstancesPerUser],
        migrations: LiveActivityMigrations.all,
        jobKinds: [
            LiveActivityJobKind.start, LiveActivityJobKind.send, LiveActivityJobKind.scheduledEnd,
            LiveActivityJobKind.expire, LiveActivityJobKind.deleteChannel, LiveActivityRetention.jobKind,
        ],
        webhookEventTypes: ["live_activity.started", "live_activity.ended", "live_activity.failed"],
        retention: [
            "A channel Herald created for an activity: HERALD_CHANNEL_RETENTION after the activity ended, "
                + "then deleted on APNs.",
            "An activity that ended, was cancelled, failed or expired, with its instances, users and deliveries: "
                + "HERALD_LIVE_ACTIVITY_RETENTION_DAYS after its last change (and after its channel's deletion), "
                + "then deleted hourly.",
        ]
    ) { context in
        var service = LiveActivityService(
            jobs: try context.service(LiveActivityJobs.self),
            quotas: try LiveActivitySettings.quotas(environment: context.environment)
        )
        // Boards, when composed, hear of each activity created.
        service.creationHook = try? context.service((any LiveActivityCreationHook).self)
        // Polls, when composed, list the user's open polls in /v1/client/upcoming.
        let upcoming = try? context.service((any ClientUpcomingSource).self)
        return LiveActivityRoutes(service: service).routes
            + ClientLiveActivityRoutes(service: service, upcoming: upcoming).routes
    } jobs: { context in
        let clients = try context.service(APNSClientProvider.self)
        let store = LiveActivityStore(database: try context.service((any Database).self))
        let channelRetention = try LiveActivitySettings.load(environment: context.environment)
        let liveActivityJobs = LiveActivityJobs(
            store: store,
            users: try context.service((any LiveActivityUserDirectory).self),
            clients: clients,
            channels: clients,
            clock: context.clock,
            channelRetention: channelRetention,
            events: try? context.service((any LiveActivityEvents).self)
        )
        var jobs = FeatureJobs()
        liveActivityJobs.register(on: &jobs.handlers)
        let retention = LiveActivityRetention(
            store: store,
            retention: try LiveActivitySettings.retention(environment: context.environment),
            channelRetention: channelRetention
        )
        jobs.recur(retention.job, clock: context.clock)
        // Accepted updates enqueue their send jobs on the queue the handlers run on.
        jobs.whenQueued { queue in liveActivityJobs.attach(queue) }
        jobs.provide(liveActivityJobs)
        return jobs
    } checkSettings: { context in
        do throws(ConfigurationError) {
            _ = try LiveActivitySettings.load(environment: context.environment)
            _ = try LiveActivitySettings.retention(environment: context.environment)
            _ = try LiveActivitySettings.quotas(environment: context.environment)
            return []
        } catch {
            return error.problems
        }
    }
}
