import APNs
import APNsTransport
import Devices
import HeraldCore
public import HeraldFeature
import Jobs
import Storage

/// Durable notifications as a feature: `/v1/notifications` and `/v1/dead-tokens` behind an API key
/// (``NotificationRoutes``), the notification tables, the `notification.send` job that sends each
/// one and the hourly `notifications.prune` that deletes finished ones.
///
/// Its jobs are built from what `herald serve` provides: the database, the ``DeviceStore`` (the
/// sender marks the devices of tokens APNs calls dead), the ``APNSClientProvider``, the queue's
/// `JobWorkerConfiguration` (its lease bounds a send's claim, its retention the notifications')
/// and, when there is one, the ``NotificationFinishObserver`` that records a finished notification
/// as a webhook event. The jobs provide the ``NotificationSender`` the routes send with.
public enum Notifications {
    public static let feature = HeraldFeature(
        name: "Notifications",
        migrations: NotificationMigrations.all,
        jobKinds: [NotificationJobKind.send, NotificationRetention.jobKind],
        retention: [
            "A finished notification and its per-token results: HERALD_JOB_RETENTION_HOURS, then deleted hourly."
        ]
    ) { context in
        let service = NotificationService(
            queue: try context.service(JobQueue.self),
            sender: try context.service(NotificationSender.self)
        )
        return NotificationRoutes(service: service).routes
    } jobs: { context in
        let queue = try context.service(JobWorkerConfiguration.self)
        let store = NotificationStore(
            database: try context.service((any Database).self),
            devices: try context.service(DeviceStore.self),
            // None provided: nothing is told when a notification finishes.
            finishObserver: try? context.service((any NotificationFinishObserver).self)
        )
        let sender = NotificationSender(
            store: store,
            clients: try context.service(APNSClientProvider.self),
            clock: context.clock,
            // Shorter than the job lease: a job recovered from a dead instance finds its claim expired.
            sendLease: min(10, queue.lease / 2),
            logger: Logger(label: "herald.notifications")
        )
        var jobs = FeatureJobs()
        NotificationService.register(sender, on: &jobs.handlers)
        jobs.recur(NotificationRetention(store: store, retention: queue.retention).job, clock: context.clock)
        jobs.provide(sender)
        return jobs
    }
}
