import APNs
import APNsTransport
import Devices
import Foundation
import HTTPRouting
import HeraldAPI
import HeraldCore
import Jobs
import Notifications
import Storage
import Wake

/// The wake-schedule parts of `herald serve`: the runner (`wake.run` jobs, each occurrence
/// chaining the next), the hourly pruning of the per-device floor, and the `/v1/wake-schedules`
/// routes.
struct WakeWiring {
    let store: WakeStore
    let runner: WakeRunner
    let pruning: HourlyJob
    let cloudKitConfigured: Bool

    init(
        _ database: any Database,
        _ devices: DeviceStore,
        _ clients: APNSClientProvider,
        publisher: (any WakeRecordPublisher)?,
        minimumInterval: Double
    ) {
        let store = WakeStore(database: database)
        self.store = store
        runner = WakeRunner(
            store: store,
            devices: devices,
            clients: clients,
            publisher: publisher,
            minimumInterval: minimumInterval,
            logger: Logger(label: "herald.wake")
        )
        pruning = HourlyJob(kind: "wake.prune") { now in
            _ = try await store.prunePings(before: now.addingTimeInterval(-minimumInterval))
        }
        cloudKitConfigured = publisher != nil
    }

    func register(on handlers: inout JobHandlers) {
        runner.register(on: &handlers)
        pruning.register(on: &handlers)
    }

    func attach(_ queue: JobQueue) async throws {
        runner.attach(queue)
        try await pruning.schedule(on: queue)
    }

    func register(
        on router: inout Router,
        queue: JobQueue,
        apps: [APNSAppConfiguration],
        keys: APIKeys,
        idempotency: IdempotencyStore
    ) {
        let service = WakeService(store: store, queue: queue, apps: apps, cloudKitConfigured: cloudKitConfigured)
        WakeRoutes(service: service, keys: keys, idempotency: idempotency).register(on: &router)
    }
}
