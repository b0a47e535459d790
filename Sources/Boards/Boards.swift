import APNsTransport
public import Foundation
public import HeraldCore
public import HeraldFeature
import Jobs
import LiveActivities
import Notifications
import Storage

/// Live boards as a feature: `POST /v1/client/live-activities/{id}/board` behind a client token
/// (``BoardRoutes``), `HERALD_BOARD_MIN_INTERVAL`, the boards' tables, the jobs that end a board
/// once everyone arrived and nudge the members who posted nothing (``BoardJobKind``), and the
/// hourly prune. Boards are created with their activity (`"members"` and `"board"` of
/// `POST /v1/live-activities`): the Live Activities feature tells this one through the
/// ``LiveActivityCreationHook`` it provides.
public enum Boards {
    public static let feature = HeraldFeature(
        name: "Boards",
        settings: [.boardMinInterval],
        migrations: BoardMigrations.all,
        jobKinds: [BoardJobKind.end, BoardJobKind.nudge, BoardJobKind.prune],
        retention: [
            "A board's first posts and arrivals: with its activity (HERALD_LIVE_ACTIVITY_RETENTION_DAYS), "
                + "deleted hourly once the activity is. ETAs are never stored."
        ]
    ) { context in
        BoardRoutes(hub: try context.service(BoardHub.self)).routes
    } jobs: { context in
        let database = try context.service((any Database).self)
        let store = BoardStore(database: database)
        let queue = AttachedJobQueue()
        let hub = BoardHub(
            store: store,
            jobs: try context.service(LiveActivityJobs.self),
            queue: queue,
            clock: context.clock,
            interval: try BoardSettings.interval(environment: context.environment)
        )
        let boardJobs = BoardJobs(
            hub: hub,
            nudger: NotificationNudger(sender: try context.service(NotificationSender.self), queue: queue)
        )
        var jobs = FeatureJobs()
        boardJobs.register(on: &jobs.handlers)
        jobs.recur(boardJobs.prune, clock: context.clock)
        jobs.whenQueued { queue.attach($0) }
        jobs.provide(hub)
        jobs.provide(BoardCreationHook(store: store, clock: context.clock) as any LiveActivityCreationHook)
        return jobs
    } checkSettings: { context in
        do throws(ConfigurationError) {
            _ = try BoardSettings.interval(environment: context.environment)
            return []
        } catch {
            return error.problems
        }
    }
}

/// `HERALD_BOARD_MIN_INTERVAL`: the least time between two broadcasts of one board.
public enum BoardSettings {
    /// In seconds, 1 s to 1 h; default 1 s.
    public static func interval(environment: [String: String]) throws(ConfigurationError) -> TimeInterval {
        var reader = EnvironmentReader(environment)
        let seconds = reader.choice(
            .boardMinInterval,
            default: Int64(1),
            { text in DurationText.seconds(text).flatMap { (1...3_600).contains($0) ? $0 : nil } },
            allowed: "a duration from 1s to 1h, such as 1s, 5s or 1m"
        )
        try reader.validate()
        return TimeInterval(seconds)
    }
}
