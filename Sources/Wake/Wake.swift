import APNs
import APNsTransport
import CloudKit
import Devices
import Foundation
import HeraldCore
public import HeraldFeature
import Jobs
import Storage

/// Wake schedules as a feature: `/v1/wake-schedules` behind an API key (``WakeRoutes``),
/// `HERALD_WAKE_MIN_INTERVAL` (``WakeSettings``), the wake tables, the `wake.run` job (each
/// occurrence enqueues the next) and the hourly `wake.prune` of the per-device floor.
///
/// Its jobs are built from what `herald serve` provides: the database, the ``DeviceStore`` the
/// audiences are read from, the ``APNSClientProvider`` and the ``CloudKitSettings`` (CloudKit-mode
/// schedules are refused when they name no key). The runner gets the queue once it exists; the
/// jobs provide the ``WakeStore`` the routes use.
public enum Wake {
    public static let feature = HeraldFeature(
        name: "Wake",
        settings: [.wakeMinInterval],
        migrations: WakeMigrations.all,
        jobKinds: [WakeRunner.jobKind, pruneJobKind],
        retention: [
            "A wake schedule until it is deleted, with its last 50 runs; a device's last ping for "
                + "HERALD_WAKE_MIN_INTERVAL, then deleted hourly."
        ]
    ) { context in
        let clients = try context.service(APNSClientProvider.self)
        let service = WakeService(
            store: try context.service(WakeStore.self),
            queue: try context.service(JobQueue.self),
            apps: clients.apps,
            cloudKitConfigured: try publisher(context) != nil
        )
        return WakeRoutes(service: service).routes
    } jobs: { context in
        let minimumInterval = try WakeSettings.load(environment: context.environment)
        let store = WakeStore(database: try context.service((any Database).self))
        let runner = WakeRunner(
            store: store,
            devices: try context.service(DeviceStore.self),
            clients: try context.service(APNSClientProvider.self),
            publisher: try publisher(context),
            clock: context.clock,
            minimumInterval: minimumInterval,
            logger: Logger(label: "herald.wake")
        )
        var jobs = FeatureJobs()
        runner.register(on: &jobs.handlers)
        jobs.recur(
            HourlyJob(kind: pruneJobKind) { now in
                _ = try await store.prunePings(before: now.addingTimeInterval(-minimumInterval))
            },
            clock: context.clock
        )
        // The runner enqueues each schedule's next occurrence on the queue its handler runs on.
        jobs.whenQueued { queue in runner.attach(queue) }
        jobs.provide(store)
        return jobs
    } checkSettings: { context in
        do throws(ConfigurationError) {
            _ = try WakeSettings.load(environment: context.environment)
            return []
        } catch {
            return error.problems
        }
    }

    /// The hourly job that forgets pings older than the per-device floor.
    public static let pruneJobKind = "wake.prune"

    /// CloudKit's side of the wake pings, `nil` when no CloudKit key is configured.
    static func publisher(_ context: FeatureContext) throws(FeatureError) -> CloudKitWakePublisher? {
        CloudKitWakePublisher(settings: try context.service(CloudKitSettings.self))
    }
}
