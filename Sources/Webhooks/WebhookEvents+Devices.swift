import APNs
public import Devices
import HeraldCore
public import Storage

// `device.invalidated`: written in the transaction that marks the devices invalid, so an event is
// recorded exactly when the change commits, once per device that moved to invalid.
extension WebhookEvents: DeviceEvents {
    public func devicesInvalidated(_ events: [DeviceInvalidatedEvent], on executor: any DatabaseExecutor) async throws {
        let now = store.clock.now()
        try await record(
            events.map { event in
                .deviceInvalidated(
                    token: event.token,
                    app: event.app,
                    environment: event.environment == .production ? "production" : "sandbox",
                    reason: event.reason,
                    invalidAt: event.invalidAt,
                    at: now
                )
            },
            on: executor
        )
    }

    // `device.reassigned`: written in the registering transaction, once per token that moved.
    public func devicesReassigned(_ events: [DeviceReassignedEvent], on executor: any DatabaseExecutor) async throws {
        let now = store.clock.now()
        try await record(
            events.map { event in
                .deviceReassigned(
                    token: event.token,
                    app: event.app,
                    environment: event.environment == .production ? "production" : "sandbox",
                    fromUserID: event.fromUserID,
                    toUserID: event.toUserID,
                    at: now
                )
            },
            on: executor
        )
    }

    public func invalidationsCommitted() {
        committed()
    }
}
