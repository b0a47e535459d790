public import Storage

/// Hears about devices that became invalid, inside the transaction that invalidated them: what it
/// writes (a webhook event, say) commits or rolls back with the change, so an event is never lost
/// nor sent for a change that did not happen.
///
/// Called once per batch of invalidations of one (app, environment), only for devices that moved
/// from active (or unknown) to invalid; a token already invalid is not reported again.
public protocol DeviceEvents: Sendable {
    /// Records `events` using `executor`, the invalidating transaction. Throwing rolls it back.
    func devicesInvalidated(_ events: [DeviceInvalidatedEvent], on executor: any DatabaseExecutor) async throws

    /// Called after a transaction in which ``devicesInvalidated(_:on:)`` was called has committed
    /// (to wake a job worker that delivers what it recorded). Does nothing unless implemented.
    func invalidationsCommitted()
}

extension DeviceEvents {
    public func invalidationsCommitted() {}
}
