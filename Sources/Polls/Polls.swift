import Foundation
import HeraldCore
public import HeraldFeature
import Jobs
import LiveActivities
import Storage

/// Polls as a feature: shared activities on a group's Lock Screens. `/v1/polls` behind an API
/// key and `/v1/client/polls` behind a member's client token (``PollRoutes``), the poll tables
/// (``PollMigrations``), the jobs that close polls at `closes_at` and end their activities
/// (``PollJobKind``), the `poll.finalized` webhook event, and the hourly deletion of final polls
/// `HERALD_LIVE_ACTIVITY_RETENTION_DAYS` after they became final (the Live Activities setting).
///
/// Its activities are the Live Activities feature's: the routes bind the Live Activities
/// service (``LiveActivityJobs``, which that feature's jobs provide) to the poll service its
/// jobs were built with.
public enum Polls {
    public static let feature = HeraldFeature(
        name: "Polls",
        migrations: PollMigrations.all,
        jobKinds: [PollJobKind.close, PollJobKind.end, PollJobKind.prune],
        webhookEventTypes: ["poll.finalized"],
        retention: [
            "A final poll, with its members and votes: HERALD_LIVE_ACTIVITY_RETENTION_DAYS after it became final, "
                + "then deleted hourly."
        ]
    ) { context in
        let service = try context.service(PollService.self)
        service.bind(LiveActivityService(jobs: try context.service(LiveActivityJobs.self)))
        return PollRoutes(service: service).routes
    } jobs: { context in
        let service = PollService(
            store: PollStore(database: try context.service((any Database).self)),
            clock: context.clock,
            events: try? context.service((any PollEvents).self),
            logger: context.logger
        )
        let retention = try LiveActivitySettings.retention(environment: context.environment)
        var jobs = FeatureJobs()
        service.register(on: &jobs.handlers)
        jobs.recur(
            HourlyJob(kind: PollJobKind.prune) { now in
                _ = try await service.store.deleteFinal(before: now.addingTimeInterval(-retention))
            },
            clock: context.clock
        )
        jobs.whenQueued { queue in service.attach(queue) }
        jobs.provide(service)
        // The user's open polls in GET /v1/client/upcoming, beside the activities.
        jobs.provide(PollUpcoming(store: service.store) as any ClientUpcomingSource)
        return jobs
    }
}
